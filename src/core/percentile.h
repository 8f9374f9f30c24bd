// The p-th percentile (0..100) of a sample, linearly interpolated between the two nearest
// ranks (numpy's default); 0 for an empty sample. For benchmark reports.
#pragma once

#include <algorithm>
#include <vector>

namespace tessera {

inline double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double rank = p / 100.0 * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(rank);
  const auto hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (rank - static_cast<double>(lo));
}

}  // namespace tessera
