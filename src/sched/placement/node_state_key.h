// A node's free state up to permutation of its GPUs: model, free CPU, free memory (when a
// policy cares) and the multiset of its GPUs' free milli. Fragmentation-style scores depend
// only on this, so policies memoise on it and nodes in equal states (e.g. all empty nodes of
// one type) share one computation.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>

#include "core/cluster.h"
#include "core/cluster_state.h"

namespace tessera {

struct NodeStateKey {
  std::int64_t cpu_free = 0;
  std::int64_t memory_free = 0;                          // 0 unless the policy asked for memory
  std::array<std::int32_t, kMaxGpusPerNode> gpu_free{};  // sorted descending
  std::uint8_t model = 0;
  std::uint8_t gpus = 0;

  static NodeStateKey Of(const Node& node, const NodeState& s, bool with_memory) {
    NodeStateKey k{s.free.cpu_milli,
                   with_memory ? s.free.memory_mib : 0,
                   {},
                   node.gpu_model,
                   static_cast<std::uint8_t>(node.gpu_count)};
    std::copy_n(s.gpu_free.begin(), node.gpu_count, k.gpu_free.begin());
    std::sort(k.gpu_free.begin(), k.gpu_free.begin() + node.gpu_count, std::greater<>());
    return k;
  }
  friend bool operator==(const NodeStateKey&, const NodeStateKey&) = default;
};

struct NodeStateKeyHash {
  std::size_t operator()(const NodeStateKey& k) const noexcept {
    std::uint64_t h = 1469598103934665603ULL;  // FNV-1a over the fields
    auto mix = [&](std::uint64_t v) { h = (h ^ v) * 1099511628211ULL; };
    mix(static_cast<std::uint64_t>(k.cpu_free));
    mix(static_cast<std::uint64_t>(k.memory_free));
    for (int g = 0; g < k.gpus; ++g) mix(static_cast<std::uint64_t>(k.gpu_free[g]));
    mix(k.model);
    return h;
  }
};

}  // namespace tessera
