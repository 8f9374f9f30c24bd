// clustering (GPU clustering as in the FGD paper's baselines): keep tasks of equal per-GPU
// request together. Tiers: 4 = the node's GPU tasks all have this task's per-GPU request,
// 3 = they include it among others, 2 = the node has no GPU task, 1 = the rest. Within a tier
// the fuller node wins. Score = tier · 10^6 − free GPU milli of the node.
#include "sched/placement/policies.h"

namespace tessera {

namespace {
class GpuClusteringPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "clustering"; }
  NodeScore Score(const ClusterState& state, NodeId id, const TaskShape& shape,
                  Rng&) const override {
    const auto& node = state.cluster().node(id);
    const auto& s = state.node(id);
    const auto& sizes = state.request_sizes(id);
    bool has_same = false;
    for (const auto& [milli, count] : sizes) has_same |= (milli == shape.gpu_milli);
    double tier = 1;
    if (sizes.empty()) {
      tier = 2;
    } else if (has_same) {
      tier = sizes.size() == 1 ? 4 : 3;
    }
    return {tier * 1e6 - static_cast<double>(s.free.gpu_milli), TightestGpus(node, s, shape)};
  }
};
}  // namespace

std::unique_ptr<PlacementPolicy> MakeGpuClusteringPolicy() {
  return std::make_unique<GpuClusteringPolicy>();
}

}  // namespace tessera
