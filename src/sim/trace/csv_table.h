// A small CSV tokenizer for trace and cluster files that remembers where every field came
// from, so that a bad value can be reported as "FILE:LINE:COLUMN: column 'NAME': reason".
// Handles CRLF line endings, a missing final newline, a UTF-8 byte order mark, blank lines and
// quoted fields ("a,b" and "say ""hi"""). A quoted field may not span lines: no trace field
// holds a newline, and keeping one record per physical line means a stray quote damages one
// row, not the rest of the file.
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tessera {

// Where a line could not be split into fields: the 1-based column (field index) and why.
struct CsvLineError {
  int column = 0;
  std::string reason;
};

// One record: its physical line (1-based) and its fields, unquoted and with the blanks around
// unquoted fields trimmed. `malformed` is set when the line could not be split; `fields` then
// holds what came before the fault.
struct CsvRecord {
  std::int64_t line = 0;
  std::vector<std::string> fields;
  std::optional<CsvLineError> malformed;
};

class CsvFile {
 public:
  // Opens `path` for reading. Fails with a clear message for a missing file, a directory or
  // a file that cannot be read.
  static Result<CsvFile> Open(const std::string& path);

  // Reads the next non-blank record into `record`. The separator is a comma, or '|' when the
  // first line has a '|' and no comma (sacct --parsable2 output, whose fields are not quoted).
  // Returns false at the end of the file and an Error only when the file itself cannot be read. A
  // line that cannot be split (an unterminated quote, text after a closing quote) comes back with
  // `record->malformed` set, so that the caller can name the column or skip the row; the file stays
  // readable.
  Result<bool> Next(CsvRecord* record);

  const std::string& path() const { return path_; }

 private:
  CsvFile(std::string path, std::unique_ptr<std::ifstream> in)
      : path_(std::move(path)), in_(std::move(in)) {}

  std::string path_;
  std::unique_ptr<std::ifstream> in_;  // a pointer so that CsvFile can move into a Result
  std::int64_t line_ = 0;
  std::string buffer_;
  char separator_ = 0;  // decided on the first non-blank line
};

// Splits one line (without its line ending) into fields; nullopt when it is well formed.
std::optional<CsvLineError> SplitCsvLine(std::string_view line, std::vector<std::string>* fields);
// Splits a '|'-separated line (no quoting), trimming blanks around each field.
void SplitPipeLine(std::string_view line, std::vector<std::string>* fields);

// True when `s` is well-formed UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF).
bool IsValidUtf8(std::string_view s);

// `s` made safe to quote in an error message: at most `max_chars`, control bytes and
// non-ASCII bytes shown as '?'.
std::string Printable(std::string_view s, std::size_t max_chars = 80);

// The header of a CSV file: column names (trimmed and lower-cased) and their positions.
class CsvHeader {
 public:
  explicit CsvHeader(const std::vector<std::string>& fields);

  const std::vector<std::string>& names() const { return names_; }
  int size() const { return static_cast<int>(names_.size()); }
  // 0-based position of `name`, or -1.
  int Find(std::string_view name) const;
  bool Has(std::string_view name) const { return Find(name) >= 0; }
  // The first name that appears twice, if any.
  std::optional<std::string> Duplicate() const;
  // "a,b,c" as it appeared (after normalisation), shortened for messages.
  std::string Joined() const;

 private:
  std::vector<std::string> names_;
};

// "FILE:LINE:COLUMN: column 'NAME': REASON" — the one shape of every row error.
std::string FieldErrorText(std::string_view path, std::int64_t line, int column,
                           std::string_view name, std::string_view reason);

}  // namespace tessera
