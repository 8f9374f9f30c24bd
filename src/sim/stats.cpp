#include "sim/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tessera {

namespace {
double NearestRank(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  rank = std::clamp<std::size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}
}  // namespace

Distribution Summarize(std::vector<double> values) {
  Distribution d;
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  d.count = values.size();
  d.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  d.p50 = NearestRank(values, 0.50);
  d.p95 = NearestRank(values, 0.95);
  d.p99 = NearestRank(values, 0.99);
  d.max = values.back();
  return d;
}

std::vector<std::pair<double, double>> CdfPoints(std::vector<double> values, std::size_t points) {
  std::vector<std::pair<double, double>> out;
  if (values.empty() || points == 0) return out;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  const std::size_t step = std::max<std::size_t>(1, n / points);
  for (std::size_t i = step - 1; i < n; i += step) {
    out.emplace_back(values[i], static_cast<double>(i + 1) / static_cast<double>(n));
  }
  if (out.empty() || out.back().second < 1.0) out.emplace_back(values.back(), 1.0);
  return out;
}

std::vector<std::pair<double, double>> Downsample(const std::vector<std::pair<double, double>>& s,
                                                  std::size_t points) {
  if (s.size() <= points || points < 3) return s;
  std::vector<std::pair<double, double>> out;
  out.push_back(s.front());
  const std::size_t buckets = points - 2;
  const double per = static_cast<double>(s.size() - 2) / static_cast<double>(buckets);
  for (std::size_t b = 0; b < buckets; ++b) {
    const auto lo = 1 + static_cast<std::size_t>(static_cast<double>(b) * per);
    const auto hi = std::min(s.size() - 1, 1 + static_cast<std::size_t>(static_cast<double>(b + 1) * per));
    if (lo >= hi) continue;
    auto best = lo;
    for (auto i = lo; i < hi; ++i) {
      if (s[i].second > s[best].second) best = i;
    }
    out.push_back(s[best]);
  }
  out.push_back(s.back());
  return out;
}

}  // namespace tessera
