// The Prometheus text exposition format (version 0.0.4), written by every daemon's /metrics:
// a pure formatter with no I/O, so that the controller, the agent, the gateway and the engine
// share one way of escaping labels, printing values and laying out histograms. Each family is
// opened with its HELP and TYPE lines and followed by its samples; a histogram's buckets are
// cumulative and end in le="+Inf", as the format requires.
//
// Also here: Histogram, a value type of fixed bucket bounds that owners fill and copy out.
//
// Thread-safety: none; a writer is used by one thread, a Histogram guarded by its owner.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera {

enum class MetricType { kCounter, kGauge, kHistogram };

// Label pairs in the order they are printed. Keep their values bounded (queue, node, GPU,
// route, code, kind, phase): never a job name or an id.
using MetricLabels = std::vector<std::pair<std::string_view, std::string>>;

// Counts of observations at most each bound (not cumulative), the total and the sum.
class Histogram {
 public:
  // REQUIRES: `bounds` ascending; they must outlive the histogram (a static array).
  explicit Histogram(std::span<const double> bounds) : bounds_(bounds), counts_(bounds.size(), 0) {}

  void Observe(double value);
  std::span<const double> bounds() const { return bounds_; }
  // Observations in (bounds[i-1], bounds[i]]; those above the last bound are only in count().
  const std::vector<std::int64_t>& counts() const { return counts_; }
  std::int64_t count() const { return count_; }
  double sum() const { return sum_; }

 private:
  std::span<const double> bounds_;
  std::vector<std::int64_t> counts_;
  std::int64_t count_ = 0;
  double sum_ = 0;
};

// Bucket bounds in seconds for latencies from a millisecond to a minute.
inline constexpr double kLatencyBucketsSeconds[] = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
// Bucket bounds in seconds for waits from a tenth of a second to a day (submit to bind).
inline constexpr double kWaitBucketsSeconds[] = {0.1, 0.5, 1,    5,    10,    30,   60,
                                                 300, 600, 1800, 3600, 10800, 86400};

class MetricsWriter {
 public:
  // Opens a family: `name` is its full name (tessera_..., with the unit and, for a counter,
  // _total); `help` one line.
  void Family(std::string_view name, MetricType type, std::string_view help);
  // One sample of the family opened last (gauges and counters).
  void Sample(const MetricLabels& labels, double value);
  void Sample(double value) { Sample({}, value); }
  // One histogram of the family opened last: its _bucket, _sum and _count lines.
  void Sample(const MetricLabels& labels, const Histogram& histogram);
  // A whole family of one unlabelled sample.
  void Single(std::string_view name, MetricType type, std::string_view help, double value);

  // Text written so far (appended to by more calls).
  const std::string& text() const { return out_; }
  std::string Take() { return std::move(out_); }

  // Content-Type of the format.
  static constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

 private:
  void Line(std::string_view suffix, const MetricLabels& labels, std::string_view extra_key,
            std::string_view extra_value, double value);
  std::string out_;
  std::string family_;
};

// A value as the format prints it: integers without a fraction, +Inf, -Inf, NaN.
std::string MetricValueText(double value);
// A label value with \, " and newlines escaped.
std::string EscapeLabelValue(std::string_view value);

}  // namespace tessera
