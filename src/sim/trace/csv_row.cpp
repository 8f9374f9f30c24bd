// Typed, located field access for the CSV readers (see csv_row.h).
#include "sim/trace/csv_row.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "spec/text.h"

namespace tessera {
namespace {

std::string_view TrimBlanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string Quoted(std::string_view text) { return "'" + Printable(text, 40) + "'"; }

std::string NumberText(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  if (ec != std::errc()) return "?";
  return std::string(buf, end);
}

}  // namespace

std::expected<double, std::string> ParseNumber(std::string_view text) {
  auto value = ParseFiniteNumber(text);
  if (value) return *value;
  switch (value.error()) {
    case NumberError::kEmpty:
      return std::unexpected("is empty");
    case NumberError::kOutOfRange:
      return std::unexpected(Quoted(text) + " is out of range");
    case NumberError::kNaN:
      return std::unexpected("is NaN");
    case NumberError::kInfinite:
      return std::unexpected("is infinite");
    case NumberError::kNotANumber:
      break;
  }
  return std::unexpected(Quoted(text) + " is not a number");
}

std::expected<std::int64_t, std::string> ParseWholeNumber(std::string_view text) {
  if (text.empty()) return std::unexpected("is empty");
  std::string_view digits = text;
  if (digits.size() > 1 && digits.front() == '+' && digits[1] != '-' && digits[1] != '+') {
    digits.remove_prefix(1);
  }
  std::int64_t value = 0;
  const char* last = digits.data() + digits.size();
  auto [ptr, ec] = std::from_chars(digits.data(), last, value);
  if (ec == std::errc() && ptr == last) return value;
  if (ec == std::errc::result_out_of_range)
    return std::unexpected(Quoted(text) + " is out of range");
  // Not a plain integer: accept "8.0" and "1e3", refuse "8.5".
  auto number = ParseNumber(text);
  if (!number) return std::unexpected(number.error());
  if (std::trunc(*number) != *number)
    return std::unexpected(Quoted(text) + " is not a whole number");
  if (std::fabs(*number) > 9e18) return std::unexpected(Quoted(text) + " is out of range");
  return static_cast<std::int64_t>(*number);
}

Status CheckCsvRowShape(std::string_view path, const CsvHeader& header, const CsvRecord& rec) {
  auto name_of = [&](int column) -> std::string {
    return column >= 1 && column <= header.size()
               ? header.names()[static_cast<std::size_t>(column - 1)]
               : std::string();
  };
  if (rec.malformed) {
    return InvalidArgument(FieldErrorText(path, rec.line, rec.malformed->column,
                                          name_of(rec.malformed->column), rec.malformed->reason));
  }
  const int n = static_cast<int>(rec.fields.size());
  if (n < header.size()) {
    return InvalidArgument(FieldErrorText(path, rec.line, n + 1, name_of(n + 1),
                                          "missing: the row has " + std::to_string(n) +
                                              " fields, the header " +
                                              std::to_string(header.size())));
  }
  if (n > header.size()) {
    return InvalidArgument(FieldErrorText(path, rec.line, header.size() + 1, "",
                                          "too many fields: the row has " + std::to_string(n) +
                                              ", the header " + std::to_string(header.size())));
  }
  for (int i = 0; i < n; ++i) {
    const std::string& field = rec.fields[static_cast<std::size_t>(i)];
    if (!IsValidUtf8(field)) {
      return InvalidArgument(
          FieldErrorText(path, rec.line, i + 1, name_of(i + 1), "not valid UTF-8 text"));
    }
    for (char c : field) {
      const auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && c != '\t') || u == 0x7F) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02X", u);
        return InvalidArgument(FieldErrorText(path, rec.line, i + 1, name_of(i + 1),
                                              std::string("contains control byte ") + hex));
      }
    }
  }
  return {};
}

std::string_view CsvRow::Text(std::string_view column) const {
  const int index = header_.Find(column);
  if (index < 0 || static_cast<std::size_t>(index) >= record_.fields.size()) return {};
  return TrimBlanks(record_.fields[static_cast<std::size_t>(index)]);
}

std::unexpected<Error> CsvRow::Fail(std::string_view column, std::string_view reason) const {
  return InvalidArgument(
      FieldErrorText(path_, record_.line, header_.Find(column) + 1, column, reason));
}

Result<double> CsvRow::CheckRange(std::string_view column, double value, double min,
                                  double max) const {
  if (value < 0 && min >= 0) {
    return Fail(column, "must not be negative, got " + Quoted(Text(column)));
  }
  if (value < min) {
    return Fail(column, "must be at least " + NumberText(min) + ", got " + Quoted(Text(column)));
  }
  if (value > max) {
    return Fail(column, Quoted(Text(column)) + " is too large (at most " + NumberText(max) + ")");
  }
  return value;
}

Result<std::int64_t> CsvRow::Int(std::string_view column, std::int64_t min,
                                 std::int64_t max) const {
  const std::string_view text = Text(column);
  if (text.empty()) return Fail(column, "required field is empty");
  auto value = ParseWholeNumber(text);
  if (!value) return Fail(column, value.error());
  if (*value < 0 && min >= 0) return Fail(column, "must not be negative, got " + Quoted(text));
  if (*value < min) {
    return Fail(column, "must be at least " + std::to_string(min) + ", got " + Quoted(text));
  }
  if (*value > max) {
    return Fail(column, Quoted(text) + " is too large (at most " + std::to_string(max) + ")");
  }
  return *value;
}

Result<std::optional<std::int64_t>> CsvRow::OptionalInt(std::string_view column, std::int64_t min,
                                                        std::int64_t max) const {
  if (Text(column).empty()) return std::optional<std::int64_t>();
  auto value = Int(column, min, max);
  if (!value) return std::unexpected(value.error());
  return std::optional<std::int64_t>(*value);
}

Result<double> CsvRow::Number(std::string_view column, double min, double max) const {
  const std::string_view text = Text(column);
  if (text.empty()) return Fail(column, "required field is empty");
  auto value = ParseNumber(text);
  if (!value) return Fail(column, value.error());
  return CheckRange(column, *value, min, max);
}

Result<std::string> CsvRow::RequiredText(std::string_view column) const {
  const std::string_view text = Text(column);
  if (text.empty()) return Fail(column, "required field is empty");
  return std::string(text);
}

Result<Tick> CsvRow::Seconds(std::string_view column) const {
  auto value = Number(column, 0, kMaxTraceSeconds);
  if (!value) return std::unexpected(value.error());
  return FromSeconds(*value);
}

Result<std::optional<Tick>> CsvRow::OptionalSeconds(std::string_view column) const {
  if (Text(column).empty()) return std::optional<Tick>();
  auto value = Seconds(column);
  if (!value) return std::unexpected(value.error());
  return std::optional<Tick>(*value);
}

Result<Tick> CsvRow::Millis(std::string_view column) const {
  auto value = Number(column, 0, kMaxTraceMillis);
  if (!value) return std::unexpected(value.error());
  return static_cast<Tick>(std::llround(*value));
}

}  // namespace tessera
