#include "spec/text.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace tessera {

std::optional<std::size_t> FirstInvalidUtf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    unsigned lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c == 0xE0) {
      len = 3, lo = 0xA0;
    } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
      len = 3;
    } else if (c == 0xED) {
      len = 3, hi = 0x9F;  // no UTF-16 surrogates
    } else if (c == 0xF0) {
      len = 4, lo = 0x90;
    } else if (c >= 0xF1 && c <= 0xF3) {
      len = 4;
    } else if (c == 0xF4) {
      len = 4, hi = 0x8F;
    } else {
      return i;
    }
    if (i + len > n) return i;
    if (s[i + 1] < lo || s[i + 1] > hi) return i;
    for (std::size_t k = 2; k < len; ++k) {
      if (s[i + k] < 0x80 || s[i + k] > 0xBF) return i;
    }
    i += len;
  }
  return std::nullopt;
}

std::string LineColumnOf(std::string_view text, std::size_t offset) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

std::string Quote(std::string_view s, std::size_t max) {
  std::string out = "\"";
  const bool valid = !FirstInvalidUtf8(s).has_value();
  for (std::size_t i = 0; i < s.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7F || (!valid && c >= 0x80)) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > max) out += "...";
  out += '"';
  if (valid && s.size() > max) {
    // Do not leave a cut multi-byte sequence behind.
    while (FirstInvalidUtf8(out)) out.erase(out.size() - 5, 1);
  }
  return out;
}

std::expected<double, NumberError> ParseFiniteNumber(std::string_view text) {
  if (text.empty()) return std::unexpected(NumberError::kEmpty);
  std::string_view digits = text;
  // from_chars takes no leading '+', people and some tools write one.
  if (digits.size() > 1 && digits.front() == '+' && digits[1] != '-' && digits[1] != '+') {
    digits.remove_prefix(1);
  }
  double value = 0;
  const char* last = digits.data() + digits.size();
  auto [ptr, ec] = std::from_chars(digits.data(), last, value, std::chars_format::general);
  if (ec == std::errc::result_out_of_range) return std::unexpected(NumberError::kOutOfRange);
  if (ec != std::errc() || ptr != last) return std::unexpected(NumberError::kNotANumber);
  if (std::isnan(value)) return std::unexpected(NumberError::kNaN);
  if (std::isinf(value)) return std::unexpected(NumberError::kInfinite);
  return value;
}

}  // namespace tessera
