#include "core/metrics_text.h"

#include <charconv>
#include <cmath>

namespace tessera {

void Histogram::Observe(double value) {
  for (std::size_t i = 0; i < bounds_.size(); ++i) {
    if (value <= bounds_[i]) {
      ++counts_[i];
      break;
    }
  }
  ++count_;
  sum_ += value;
}

std::string MetricValueText(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[32];
  constexpr double kExact = 9007199254740992.0;  // 2^53: integers print without a fraction
  if (value == std::floor(value) && std::fabs(value) < kExact) {
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, static_cast<std::int64_t>(value));
    return std::string(buf, end);
  }
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);  // shortest round trip
  return std::string(buf, end);
}

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

namespace {

const char* TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

}  // namespace

void MetricsWriter::Family(std::string_view name, MetricType type, std::string_view help) {
  family_ = name;
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  for (char c : help) out_ += c == '\n' ? ' ' : c;  // HELP is one line
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += TypeName(type);
  out_ += '\n';
}

void MetricsWriter::Line(std::string_view suffix, const MetricLabels& labels,
                         std::string_view extra_key, std::string_view extra_value, double value) {
  out_ += family_;
  out_ += suffix;
  if (!labels.empty() || !extra_key.empty()) {
    out_ += '{';
    bool first = true;
    for (const auto& [key, v] : labels) {
      if (!first) out_ += ',';
      first = false;
      out_ += key;
      out_ += "=\"";
      out_ += EscapeLabelValue(v);
      out_ += '"';
    }
    if (!extra_key.empty()) {
      if (!first) out_ += ',';
      out_ += extra_key;
      out_ += "=\"";
      out_ += extra_value;
      out_ += '"';
    }
    out_ += '}';
  }
  out_ += ' ';
  out_ += MetricValueText(value);
  out_ += '\n';
}

void MetricsWriter::Sample(const MetricLabels& labels, double value) {
  Line("", labels, "", "", value);
}

void MetricsWriter::Sample(const MetricLabels& labels, const Histogram& h) {
  std::int64_t cumulative = 0;
  for (std::size_t i = 0; i < h.bounds().size(); ++i) {
    cumulative += h.counts()[i];
    Line("_bucket", labels, "le", MetricValueText(h.bounds()[i]), static_cast<double>(cumulative));
  }
  Line("_bucket", labels, "le", "+Inf", static_cast<double>(h.count()));
  Line("_sum", labels, "", "", h.sum());
  Line("_count", labels, "", "", static_cast<double>(h.count()));
}

void MetricsWriter::Single(std::string_view name, MetricType type, std::string_view help,
                           double value) {
  Family(name, type, help);
  Sample(value);
}

}  // namespace tessera
