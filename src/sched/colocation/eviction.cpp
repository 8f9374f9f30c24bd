#include "sched/colocation/eviction.h"

#include <algorithm>
#include <numeric>
#include <tuple>

namespace tessera {

std::int64_t EvictionCost(std::int64_t gpu_milli, Tick ran, Tick eviction_cost) {
  return gpu_milli * (std::max<Tick>(0, ran) + eviction_cost);
}

std::vector<std::size_t> ChooseVictims(const std::vector<EvictionCandidate>& candidates,
                                       const std::function<bool(const std::vector<char>&)>& fits,
                                       bool* ok) {
  std::vector<std::size_t> order(candidates.size());
  std::iota(order.begin(), order.end(), 0);
  std::ranges::sort(order, [&](std::size_t a, std::size_t b) {
    return std::tie(candidates[a].cost, candidates[a].job) <
           std::tie(candidates[b].cost, candidates[b].job);
  });
  std::vector<char> chosen(candidates.size(), 0);
  *ok = fits(chosen);
  std::vector<std::size_t> taken;
  for (std::size_t i : order) {
    if (*ok) break;
    chosen[i] = 1;
    taken.push_back(i);
    *ok = fits(chosen);
  }
  if (!*ok) return {};
  // Spare the dearest victims first: each one whose return still leaves the need met.
  for (auto it = taken.rbegin(); it != taken.rend(); ++it) {
    chosen[*it] = 0;
    if (!fits(chosen)) chosen[*it] = 1;
  }
  std::vector<std::size_t> victims;
  for (std::size_t i : order) {
    if (chosen[i]) victims.push_back(i);
  }
  return victims;
}

}  // namespace tessera
