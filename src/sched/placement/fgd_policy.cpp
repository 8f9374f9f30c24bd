// fgd: Fragmentation Gradient Descent (Weng et al., USENIX ATC'23, Algorithm 1). Place the task
// on the node, and for a share on the GPU, where the node's fragmentation F_n (see
// fragmentation.h) grows the least. Score = −ΔF_n (scaled by the target workload's size, so
// exact in integers). Not thread-safe (memo): one policy object per scheduler.
#include <algorithm>
#include <array>
#include <unordered_map>

#include "sched/placement/node_state_key.h"
#include "sched/placement/policies.h"

namespace tessera {

namespace {

class FgdPolicy final : public PlacementPolicy {
 public:
  explicit FgdPolicy(TargetWorkload w) : workload_(std::move(w)) {}
  std::string_view name() const override { return "fgd"; }
  NodeScore Score(const ClusterState& state, NodeId id, const TaskShape& shape,
                  Rng&) const override {
    const auto& node = state.cluster().node(id);
    const auto& s = state.node(id);
    const std::int64_t before = Fragment(node, s);
    auto delta_if = [&](std::uint16_t mask) {
      NodeState after = s;
      after.free.cpu_milli -= shape.cpu_milli;
      after.free.memory_mib -= shape.memory_mib;
      for (int g = 0; g < node.gpu_count; ++g) {
        if (mask >> g & 1) {
          after.gpu_free[g] -= shape.gpu_milli;
          after.free.gpu_milli -= shape.gpu_milli;
        }
      }
      return Fragment(node, after) - before;
    };
    if (!shape.IsShare()) {
      const auto mask = TightestGpus(node, s, shape);
      return {-static_cast<double>(delta_if(mask)), mask};
    }
    NodeScore best{0, 0};
    std::int32_t tried_free = -1;
    for (int g = 0; g < node.gpu_count; ++g) {
      if (s.gpu_free[g] < shape.gpu_milli) continue;
      if (s.gpu_free[g] == tried_free) continue;  // same free milli, same outcome
      const auto mask = static_cast<std::uint16_t>(1U << g);
      const double score = -static_cast<double>(delta_if(mask));
      if (best.gpu_mask == 0 || score > best.score) best = {score, mask};
      tried_free = s.gpu_free[g];
    }
    return best;
  }

 private:
  std::int64_t Fragment(const Node& node, const NodeState& s) const {
    // F_n ignores memory, so the memo key leaves it out.
    const auto key = NodeStateKey::Of(node, s, /*with_memory=*/false);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    const std::int64_t f = ScaledNodeFragment(node, s, workload_);
    memo_.emplace(key, f);
    return f;
  }

  TargetWorkload workload_;
  mutable std::unordered_map<NodeStateKey, std::int64_t, NodeStateKeyHash> memo_;  // memo only
};
}  // namespace

std::unique_ptr<PlacementPolicy> MakeFgdPolicy(const PlacementConfig& config) {
  return std::make_unique<FgdPolicy>(config.target_workload);
}

}  // namespace tessera
