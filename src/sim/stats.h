// Summary statistics the reports share: mean and percentiles (nearest-rank), CDF points, and
// downsampling of step series for charts.
#pragma once

#include <utility>
#include <vector>

namespace tessera {

struct Distribution {
  double mean = 0, p50 = 0, p95 = 0, p99 = 0, max = 0;
  std::size_t count = 0;
};

// Nearest-rank percentiles of `values` (copied and sorted). Empty input gives zeros.
Distribution Summarize(std::vector<double> values);

// Up to `points` (x, F(x)) pairs of the empirical CDF of `values`.
std::vector<std::pair<double, double>> CdfPoints(std::vector<double> values, std::size_t points);

// Keeps at most `points` samples of a step series (x ascending), always keeping the first and
// last and the maximum of each bucket, so that peaks survive.
std::vector<std::pair<double, double>> Downsample(const std::vector<std::pair<double, double>>& s,
                                                  std::size_t points);

}  // namespace tessera
