// Which offline tasks to evict so that something fits: the cheapest first, then a pass that
// gives back every victim not needed, so the set is minimal (no victim can be spared) and, among
// the sets the greedy order finds, cheap. Cost of a victim: the GPU-time it loses, i.e. its GPU
// milli × (time run since it started + the configured eviction cost).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/ids.h"
#include "core/time.h"

namespace tessera {

struct EvictionCandidate {
  JobId job;
  std::int64_t cost = 0;  // milli-GPU × ms lost
};

std::int64_t EvictionCost(std::int64_t gpu_milli, Tick ran, Tick eviction_cost);

// `fits(chosen)` says whether the need is met once the candidates flagged in `chosen` are gone.
// Returns the indices of the victims (in ascending cost, ties by job id), or nullopt-like empty
// with `*ok = false` when even all of them are not enough.
std::vector<std::size_t> ChooseVictims(const std::vector<EvictionCandidate>& candidates,
                                       const std::function<bool(const std::vector<char>&)>& fits,
                                       bool* ok);

}  // namespace tessera
