// The CSV tokenizer behind every trace and cluster CSV reader (see csv_table.h).
#include "sim/trace/csv_table.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace tessera {
namespace {

bool IsBlankChar(char c) { return c == ' ' || c == '\t'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsBlankChar(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsBlankChar(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

Result<CsvFile> CsvFile::Open(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) return InvalidArgument("no file name given");
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found) return NotFound(path + ": no such file");
  if (ec) return IoError(path + ": " + ec.message());
  if (fs::is_directory(st)) return InvalidArgument(path + ": is a directory, not a file");
  auto in = std::make_unique<std::ifstream>(path, std::ios::binary);
  if (!in->is_open()) {
    return IoError(path + ": cannot open: " + std::strerror(errno));
  }
  return CsvFile(path, std::move(in));
}

Result<bool> CsvFile::Next(CsvRecord* record) {
  while (std::getline(*in_, buffer_)) {
    ++line_;
    std::string_view view = buffer_;
    if (!view.empty() && view.back() == '\r') view.remove_suffix(1);
    // Spreadsheet programs save "UTF-8 CSV" with a byte order mark; it is not part of the
    // first column's name.
    if (line_ == 1 && view.starts_with("\xEF\xBB\xBF")) view.remove_prefix(3);
    if (Trim(view).empty()) continue;
    record->line = line_;
    record->malformed.reset();
    if (separator_ == 0) {
      separator_ =
          view.find('|') != std::string_view::npos && view.find(',') == std::string_view::npos
              ? '|'
              : ',';
    }
    if (separator_ == '|') {
      SplitPipeLine(view, &record->fields);
    } else {
      record->malformed = SplitCsvLine(view, &record->fields);
    }
    return true;
  }
  if (in_->bad()) return IoError(path_ + ": read error after line " + std::to_string(line_));
  return false;
}

std::optional<CsvLineError> SplitCsvLine(std::string_view s, std::vector<std::string>* fields) {
  fields->clear();
  const std::size_t n = s.size();
  std::size_t i = 0;
  int column = 1;
  while (true) {
    std::size_t start = i;
    while (i < n && IsBlankChar(s[i])) ++i;
    if (i < n && s[i] == '"') {
      std::string field;
      ++i;
      while (true) {
        if (i >= n) return CsvLineError{column, "unterminated quoted field"};
        if (s[i] == '"') {
          if (i + 1 < n && s[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        field += s[i++];
      }
      while (i < n && IsBlankChar(s[i])) ++i;
      fields->push_back(std::move(field));
      if (i >= n) break;
      if (s[i] != ',') return CsvLineError{column, "unexpected text after a closing quote"};
      ++i;
      ++column;
      continue;
    }
    std::size_t end = s.find(',', start);
    if (end == std::string_view::npos) end = n;
    fields->emplace_back(Trim(s.substr(start, end - start)));
    if (end == n) break;
    i = end + 1;
    ++column;
  }
  return std::nullopt;
}

void SplitPipeLine(std::string_view s, std::vector<std::string>* fields) {
  fields->clear();
  std::size_t start = 0;
  while (true) {
    const std::size_t end = s.find('|', start);
    fields->emplace_back(Trim(s.substr(start, end == std::string_view::npos ? end : end - start)));
    if (end == std::string_view::npos) return;
    start = end + 1;
  }
}

bool IsValidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    int len = 0;
    std::uint32_t cp = 0;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;  // a continuation byte out of place, 0xC0/0xC1 (overlong) or > 0xF4
    }
    if (i + static_cast<std::size_t>(len) > n) return false;
    for (int k = 1; k < len; ++k) {
      const unsigned char cc = p[i + static_cast<std::size_t>(k)];
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return false;
    if (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return false;
    i += static_cast<std::size_t>(len);
  }
  return true;
}

std::string Printable(std::string_view s, std::size_t max_chars) {
  std::string out;
  const bool cut = s.size() > max_chars;
  if (cut) s = s.substr(0, max_chars);
  out.reserve(s.size() + 3);
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u >= 0x7F) ? '?' : c;
  }
  if (cut) out += "...";
  return out;
}

CsvHeader::CsvHeader(const std::vector<std::string>& fields) {
  names_.reserve(fields.size());
  for (const auto& f : fields) {
    std::string name(Trim(f));
    std::transform(name.begin(), name.end(), name.begin(), [](char c) {
      return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    });
    names_.push_back(std::move(name));
  }
}

int CsvHeader::Find(std::string_view name) const {
  for (std::size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] == name) return static_cast<int>(i);
  }
  return -1;
}

std::optional<std::string> CsvHeader::Duplicate() const {
  for (std::size_t i = 0; i < names_.size(); ++i) {
    for (std::size_t j = i + 1; j < names_.size(); ++j) {
      if (!names_[i].empty() && names_[i] == names_[j]) return names_[i];
    }
  }
  return std::nullopt;
}

std::string CsvHeader::Joined() const {
  std::string out;
  for (std::size_t i = 0; i < names_.size(); ++i) {
    if (i > 0) out += ',';
    out += names_[i];
  }
  return Printable(out, 200);
}

std::string FieldErrorText(std::string_view path, std::int64_t line, int column,
                           std::string_view name, std::string_view reason) {
  std::string out;
  out.reserve(path.size() + name.size() + reason.size() + 40);
  out += path;
  out += ':';
  out += std::to_string(line);
  out += ':';
  out += std::to_string(column);
  out += ": ";
  if (!name.empty()) {
    out += "column '";
    out += Printable(name);
    out += "': ";
  }
  out += reason;
  return out;
}

}  // namespace tessera
