#include "core/metrics_scrape.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>

namespace tessera {

namespace {

// Parses LABEL="VALUE",... up to the closing brace at or after `i`; nullopt when malformed.
std::optional<std::map<std::string, std::string>> ParseLabels(std::string_view line,
                                                              std::size_t& i) {
  std::map<std::string, std::string> labels;
  while (i < line.size() && line[i] != '}') {
    const std::size_t eq = line.find('=', i);
    if (eq == std::string_view::npos || eq + 1 >= line.size() || line[eq + 1] != '"')
      return std::nullopt;
    std::string key(line.substr(i, eq - i));
    std::string value;
    std::size_t j = eq + 2;
    for (; j < line.size() && line[j] != '"'; ++j) {
      if (line[j] == '\\' && j + 1 < line.size()) {
        ++j;
        value += line[j] == 'n' ? '\n' : line[j];
      } else {
        value += line[j];
      }
    }
    if (j >= line.size()) return std::nullopt;
    labels.emplace(std::move(key), std::move(value));
    i = j + 1;
    if (i < line.size() && line[i] == ',') ++i;
  }
  if (i >= line.size()) return std::nullopt;
  ++i;  // the brace
  return labels;
}

std::optional<double> ParseValue(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  text = text.substr(0, text.find(' '));  // a timestamp may follow
  if (text == "+Inf") return INFINITY;
  if (text == "-Inf") return -INFINITY;
  if (text == "NaN") return NAN;
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace

std::vector<ScrapedSample> ParseMetricsText(std::string_view text,
                                            const std::vector<std::string>& names) {
  std::vector<ScrapedSample> out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty() || line.front() == '#') continue;
    const std::size_t name_end = line.find_first_of("{ ");
    if (name_end == std::string_view::npos) continue;
    ScrapedSample s;
    s.name = line.substr(0, name_end);
    if (!names.empty() && std::find(names.begin(), names.end(), s.name) == names.end()) continue;
    std::size_t i = name_end;
    if (line[i] == '{') {
      ++i;
      auto labels = ParseLabels(line, i);
      if (!labels) continue;
      s.labels = std::move(*labels);
    }
    auto value = ParseValue(line.substr(i));
    if (!value) continue;
    s.value = *value;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace tessera
