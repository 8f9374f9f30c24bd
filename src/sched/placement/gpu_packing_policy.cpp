// packing (GPU packing as in the FGD paper's baselines): a share goes first to a GPU that is
// already shared (the least free one), then to a free GPU on a node already in use, then to
// an idle node; whole-GPU tasks prefer nodes in use over idle ones. Within a tier the fuller
// node wins. Score = tier · 10^6 − free GPU milli (of the chosen GPU for tier 3, else the node).
#include "sched/placement/policies.h"

namespace tessera {

namespace {
class GpuPackingPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "packing"; }
  NodeScore Score(const ClusterState& state, NodeId id, const TaskShape& shape,
                  Rng&) const override {
    const auto& node = state.cluster().node(id);
    const auto& s = state.node(id);
    const bool in_use = s.free.gpu_milli < node.capacity.gpu_milli;
    if (shape.IsShare()) {
      int shared = -1;  // a partly used GPU that fits, least free first
      for (int g = 0; g < node.gpu_count; ++g) {
        const auto f = s.gpu_free[g];
        if (f < kMilliPerGpu && f >= shape.gpu_milli && (shared < 0 || f < s.gpu_free[shared])) {
          shared = g;
        }
      }
      if (shared >= 0) {
        return {3e6 - s.gpu_free[shared], static_cast<std::uint16_t>(1U << shared)};
      }
    }
    const double tier = in_use ? 2e6 : 1e6;
    return {tier - static_cast<double>(s.free.gpu_milli), TightestGpus(node, s, shape)};
  }
};
}  // namespace

std::unique_ptr<PlacementPolicy> MakeGpuPackingPolicy() {
  return std::make_unique<GpuPackingPolicy>();
}

}  // namespace tessera
