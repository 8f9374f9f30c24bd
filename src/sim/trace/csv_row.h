// Typed access to the fields of one CSV record, by column name. Every failure comes back as
// an Error whose message is "FILE:LINE:COLUMN: column 'NAME': reason", so that the readers of
// the individual trace formats never format a location themselves.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "core/time.h"
#include "sim/trace/csv_table.h"

// `TRACE_ASSIGN_OR_RETURN(auto x, row.Int(...));` declares x from a Result, or returns its
// Error from the enclosing function. Keeps the per-column code of the readers one line each.
#define TRACE_CONCAT_INNER(a, b) a##b
#define TRACE_CONCAT(a, b) TRACE_CONCAT_INNER(a, b)
#define TRACE_ASSIGN_OR_RETURN(lhs, expr) \
  TRACE_ASSIGN_OR_RETURN_IMPL(TRACE_CONCAT(trace_result_, __LINE__), lhs, expr)
#define TRACE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)         \
  auto tmp = (expr);                                        \
  if (!tmp) return std::unexpected(std::move(tmp).error()); \
  lhs = std::move(*tmp)

namespace tessera {

// Bounds that make a value absurd rather than merely large. They catch unit mix-ups
// (nanoseconds read as seconds) and corrupt rows, and keep every sum far from int64 overflow.
inline constexpr std::int64_t kMaxTraceGpus = 100'000;
inline constexpr std::int64_t kMaxTraceNodes = 100'000;
inline constexpr double kMaxTraceSeconds = 1e11;  // ~3,000 years: room for Unix timestamps
inline constexpr double kMaxTraceMillis = kMaxTraceSeconds * 1000;
inline constexpr std::int64_t kMaxTraceCpuMilli = 100'000'000;     // 100,000 cores
inline constexpr std::int64_t kMaxTraceMemoryMib = 1'000'000'000;  // ~1 PiB

// A number in plain decimal or exponent notation ("12", "-3.5", "1e6", "+7"). Blanks around
// it are the caller's business (CsvFile trims them). The error is a reason such as
// "'abc' is not a number" or "is NaN".
std::expected<double, std::string> ParseNumber(std::string_view text);

// A whole number; "8" and "8.0" (as pandas writes integer columns that held a NaN) both
// give 8, "8.5" is an error.
std::expected<std::int64_t, std::string> ParseWholeNumber(std::string_view text);

// Checks what every format needs of a row before its fields are read: as many fields as the
// header, and text that is UTF-8 without control bytes (binary junk, a file cut mid-write, a
// wrong encoding). The error names the line, the column and the column's name.
Status CheckCsvRowShape(std::string_view path, const CsvHeader& header, const CsvRecord& record);

class CsvRow {
 public:
  CsvRow(std::string_view path, const CsvHeader& header, const CsvRecord& record)
      : path_(path), header_(header), record_(record) {}

  std::int64_t line() const { return record_.line; }
  // True when the header has `column`.
  bool Has(std::string_view column) const { return header_.Has(column); }
  // The field of `column`; empty when the header lacks the column.
  std::string_view Text(std::string_view column) const;
  bool IsEmpty(std::string_view column) const { return Text(column).empty(); }

  // An error located at `column` of this row.
  std::unexpected<Error> Fail(std::string_view column, std::string_view reason) const;

  // A required whole number in [min, max].
  Result<std::int64_t> Int(std::string_view column, std::int64_t min, std::int64_t max) const;
  // As Int, but an empty field (or a column the header lacks) gives nullopt.
  Result<std::optional<std::int64_t>> OptionalInt(std::string_view column, std::int64_t min,
                                                  std::int64_t max) const;
  // A required number in [min, max].
  Result<double> Number(std::string_view column, double min, double max) const;
  // A required non-empty text field.
  Result<std::string> RequiredText(std::string_view column) const;

  // Times, converted to Tick (milliseconds) with rounding to the nearest millisecond.
  Result<Tick> Seconds(std::string_view column) const;
  Result<std::optional<Tick>> OptionalSeconds(std::string_view column) const;
  Result<Tick> Millis(std::string_view column) const;

 private:
  Result<double> CheckRange(std::string_view column, double value, double min, double max) const;

  std::string_view path_;
  const CsvHeader& header_;
  const CsvRecord& record_;
};

}  // namespace tessera
