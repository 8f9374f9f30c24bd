// Escaping, downsampling and number formatting for the HTML report (see html_util.h).
#include "sim/report/html_util.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tessera::report {
namespace {

constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Length of the well-formed UTF-8 sequence that starts at s[i], or 0 if there is none.
std::size_t Utf8SequenceLength(std::string_view s, std::size_t i) {
  const auto at = [&](std::size_t k) -> unsigned char {
    return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0;
  };
  const unsigned char c = at(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return IsContinuation(at(1)) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    const unsigned char lo = c == 0xE0 ? 0xA0 : 0x80;
    const unsigned char hi = c == 0xED ? 0x9F : 0xBF;
    return at(1) >= lo && at(1) <= hi && IsContinuation(at(2)) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    const unsigned char lo = c == 0xF0 ? 0x90 : 0x80;
    const unsigned char hi = c == 0xF4 ? 0x8F : 0xBF;
    return at(1) >= lo && at(1) <= hi && IsContinuation(at(2)) && IsContinuation(at(3)) ? 4 : 0;
  }
  return 0;
}

// Inserts thousands separators into a string of decimal digits.
std::string GroupThousands(std::string digits) {
  for (std::ptrdiff_t pos = static_cast<std::ptrdiff_t>(digits.size()) - 3; pos > 0; pos -= 3) {
    digits.insert(static_cast<std::size_t>(pos), ",");
  }
  return digits;
}

}  // namespace

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 16);
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t len = Utf8SequenceLength(text, i);
    if (len == 0) {
      out += kReplacementChar;
      ++i;
      continue;
    }
    if (len == 1) {
      switch (text[i]) {
        case '&':
          out += "&amp;";
          break;
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '"':
          out += "&quot;";
          break;
        case '\'':
          out += "&#39;";
          break;
        default:
          out += text[i];
      }
    } else {
      out.append(text.substr(i, len));
    }
    i += len;
  }
  return out;
}

std::string JsonForScript(const nlohmann::json& value) {
  const std::string raw = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(raw.size() + raw.size() / 64);
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const char c = raw[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (c == '\xE2' && i + 2 < raw.size() && raw[i + 1] == '\x80' &&
               (raw[i + 2] == '\xA8' || raw[i + 2] == '\xA9')) {
      out += raw[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::vector<Point> Downsample(const std::vector<Point>& points, std::size_t max_points) {
  if (max_points < 4) max_points = 4;
  if (points.size() <= max_points) return points;
  const std::size_t n = points.size();
  const std::size_t inner = n - 2;  // points between the first and the last
  const std::size_t buckets = (max_points - 2) / 2;
  std::vector<Point> out;
  out.reserve(max_points);
  out.push_back(points.front());
  for (std::size_t b = 0; b < buckets; ++b) {
    const std::size_t begin = 1 + b * inner / buckets;
    const std::size_t end = 1 + (b + 1) * inner / buckets;
    if (begin >= end) continue;
    std::size_t lo = begin;
    std::size_t hi = begin;
    for (std::size_t i = begin + 1; i < end; ++i) {
      if (points[i].y < points[lo].y) lo = i;
      if (points[i].y > points[hi].y) hi = i;
    }
    if (lo == hi) {
      out.push_back(points[lo]);
    } else {
      out.push_back(points[std::min(lo, hi)]);
      out.push_back(points[std::max(lo, hi)]);
    }
  }
  out.push_back(points.back());
  return out;
}

double RoundSignificant(double value, int digits) {
  if (value == 0 || !std::isfinite(value)) return value;
  const int exponent = static_cast<int>(std::floor(std::log10(std::fabs(value))));
  const int shift = digits - 1 - exponent;
  if (shift >= 0) {
    const double scale = std::pow(10.0, shift);
    const double scaled = value * scale;
    if (!std::isfinite(scaled)) return value;
    return std::round(scaled) / scale;
  }
  const double divisor = std::pow(10.0, -shift);
  return std::round(value / divisor) * divisor;
}

std::string FormatNumber(double value) {
  if (!std::isfinite(value)) return std::isnan(value) ? "n/a" : (value > 0 ? "∞" : "−∞");
  const double magnitude = std::fabs(value);
  if (magnitude >= 1e15) return fmt::format("{:.3g}", value);
  const std::string sign = value < 0 ? "-" : "";
  if (magnitude >= 100 || value == std::floor(value)) {
    return sign + GroupThousands(fmt::format("{:.0f}", magnitude));
  }
  if (magnitude >= 10) return fmt::format("{:.1f}", value);
  if (magnitude >= 1) return fmt::format("{:.2f}", value);
  return fmt::format("{:.3g}", value);
}

TimeUnit PickTimeUnit(double max_seconds) {
  if (max_seconds >= 2 * 86400) return {86400, "days", "d"};
  if (max_seconds >= 2 * 3600) return {3600, "hours", "h"};
  if (max_seconds >= 2 * 60) return {60, "minutes", "min"};
  return {1, "seconds", "s"};
}

}  // namespace tessera::report
