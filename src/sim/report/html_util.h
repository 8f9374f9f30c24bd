// Small building blocks of the HTML report writer: escaping summary strings for HTML, making
// JSON safe to inline in a <script> element, thinning long time series for the charts, and
// formatting numbers for people. Kept apart from html_report.cpp so that tests can reach them.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::report {

// Escapes & < > " ' for HTML text and attribute values. Invalid UTF-8 becomes U+FFFD.
std::string HtmlEscape(std::string_view text);

// Serialises `value` so that it can sit inside <script type="application/json">: "<", ">" and
// "&" become \u003c, \u003e, \u0026 (so "</script>" and "<!--" cannot occur), and U+2028/U+2029
// become \u2028/\u2029. Invalid UTF-8 in strings becomes U+FFFD. The result is still valid JSON
// that parses back to `value`.
std::string JsonForScript(const nlohmann::json& value);

struct Point {
  double x = 0;
  double y = 0;
};

// Thins `points` to at most `max_points` (>= 4) points for drawing. Longer series are cut into
// equal runs of samples; each run keeps its lowest and its highest point, in their original
// order, so that peaks and dips survive; the first and last points are always kept.
std::vector<Point> Downsample(const std::vector<Point>& points, std::size_t max_points);

// Rounds to `digits` significant digits, so that the inline JSON stays short.
double RoundSignificant(double value, int digits);

// The unit durations of about `max_seconds` are shown in: at least two of it (s, min, h, d).
// The report's tables and charts and `tessera sim`'s tables pick units with it, so that both
// show the same figure in the same unit.
struct TimeUnit {
  double seconds;
  std::string_view long_name;
  std::string_view short_name;
};
TimeUnit PickTimeUnit(double max_seconds);

// "1,234,567" for integers; for fractions about three significant digits ("12.3", "0.0457").
std::string FormatNumber(double value);

}  // namespace tessera::report
