// clustering, as the FGD authors' simulator scores it (gpu_clustering_score.go): keep tasks of
// one GPU-affinity tag together (GpuAffinityTag: "share-gpu", or "N-gpu" for N whole GPUs).
// With fill = 25·(8000 − the node's free GPU milli)/8000 in integers (8000 milli being the
// largest node, a smaller node looks fuller), the score of a GPU task is
//   75 + fill  on a node whose GPU tasks all carry this task's tag,
//   50 + fill  on a node where the tag is among others,
//   25 + fill  on a node with no GPU task,
//        fill  on the rest.
// A CPU-only task scores 0 everywhere, i.e. goes where the tie-break puts it. GPUs:
// best fit (the tightest GPU for a share; the lowest-numbered free GPUs otherwise).
#include "sched/placement/policies.h"
#include "sched/placement/reference_scores.h"

namespace tessera {

namespace {
class GpuClusteringPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "clustering"; }
  bool scores_from_state() const override { return true; }
  NodeScore Score(const ClusterState& state, NodeId id, const TaskShape& shape,
                  Rng&) const override {
    const auto& node = state.cluster().node(id);
    const auto& s = state.node(id);
    if (shape.gpus == 0) return {0, 0};
    constexpr std::int64_t kQuarter = reference::kMaxNodeScore / 4;
    const std::int64_t fill =
        kQuarter * (reference::kMaxSpecGpuMilli - s.free.gpu_milli) / reference::kMaxSpecGpuMilli;
    const auto& tags = state.gpu_affinities(id);
    const std::int32_t tag = GpuAffinityTag(shape.gpus, shape.gpu_milli);
    bool has_tag = false;
    for (const auto& [t, count] : tags) has_tag |= (t == tag);
    std::int64_t base = 0;
    if (has_tag) {
      base = tags.size() == 1 ? 3 * kQuarter : 2 * kQuarter;
    } else if (tags.empty()) {
      base = kQuarter;
    }
    return {static_cast<double>(base + fill), TightestGpus(node, s, shape)};
  }
};
}  // namespace

std::unique_ptr<PlacementPolicy> MakeGpuClusteringPolicy() {
  return std::make_unique<GpuClusteringPolicy>();
}

}  // namespace tessera
