// packing, as the FGD authors' simulator scores it (gpu_packing_score.go), highest first:
//   1. a share on an already used GPU: 100 − ⌊⌊free·100/1000⌋/10⌋ of the GPU it takes (the
//      tightest that fits), at least 50;
//   2. free GPUs of a node in use: 50 − the number of fully free GPUs taken, at least 33;
//   3. a node whose GPUs are all free: max(33 − its GPU count, its GPU count).
// A CPU-only task scores 0 everywhere (it goes where the tie-break puts it). GPUs: best fit (the
// tightest GPU for a share; the lowest-numbered free GPUs otherwise), which is also the GPU
// the score looks at.
#include <algorithm>
#include <bit>

#include "sched/placement/policies.h"
#include "sched/placement/reference_scores.h"

namespace tessera {

namespace {
class GpuPackingPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "packing"; }
  bool scores_from_state() const override { return true; }
  NodeScore Score(const ClusterState& state, NodeId id, const TaskShape& shape,
                  Rng&) const override {
    const auto& node = state.cluster().node(id);
    const auto& s = state.node(id);
    if (shape.gpus == 0) return {0, 0};
    const std::uint16_t gpus = TightestGpus(node, s, shape);
    const std::int64_t fully_free = s.FullyFreeGpus(node.gpu_count);
    if (fully_free == node.gpu_count) {
      return {static_cast<double>(std::max(reference::kMaxNodeScore / 3 - fully_free, fully_free)),
              gpus};
    }
    std::int64_t free_taken = 0;  // fully free GPUs among those taken
    for (unsigned m = gpus; m != 0; m &= m - 1) {
      free_taken += s.gpu_free[std::countr_zero(m)] == kMilliPerGpu;
    }
    if (free_taken > 0) {
      return {static_cast<double>(std::max(reference::kMaxNodeScore / 2 - free_taken,
                                           reference::kMaxNodeScore / 3)),
              gpus};
    }
    std::int64_t free_percent = 0;  // of the used GPUs taken (one, for a share)
    for (unsigned m = gpus; m != 0; m &= m - 1) {
      free_percent += s.gpu_free[std::countr_zero(m)] * 100 / kMilliPerGpu;
    }
    return {static_cast<double>(std::max(reference::kMaxNodeScore - free_percent / 10,
                                         reference::kMaxNodeScore / 2)),
            gpus};
  }
};
}  // namespace

std::unique_ptr<PlacementPolicy> MakeGpuPackingPolicy() {
  return std::make_unique<GpuPackingPolicy>();
}

}  // namespace tessera
