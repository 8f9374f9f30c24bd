// dotprod (Tetris, Grandl et al., SIGCOMM'14), as the FGD authors' simulator runs it for the
// paper (dot_product_score.go with the "merge" GPU dimension and "max" normalisation): the
// node's free vector (CPU, all free GPU milli) and the task's request (CPU, all its GPU milli),
// both divided by the largest node spec (128 cores, 8000 milli); score = int(100·(1 − dot/2)),
// so the smallest dot product wins. Memory is not a dimension. GPUs: best fit ("best", the
// tightest GPU for a share; the lowest-numbered free GPUs otherwise).
#include "sched/placement/policies.h"
#include "sched/placement/reference_scores.h"

namespace tessera {

namespace {
class DotProductPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "dotprod"; }
  bool scores_from_state() const override { return true; }
  NodeScore Score(const ClusterState& state, NodeId id, const TaskShape& shape,
                  Rng&) const override {
    const auto& s = state.node(id);
    const auto need = shape.Total();
    const auto gpu_spec = static_cast<double>(reference::kMaxSpecGpuMilli);
    double dot = 0;
    dot += static_cast<double>(s.free.cpu_milli) / reference::kMaxSpecCpuMilli *
           (static_cast<double>(need.cpu_milli) / reference::kMaxSpecCpuMilli);
    dot += static_cast<double>(s.free.gpu_milli) / gpu_spec *
           (static_cast<double>(need.gpu_milli) / gpu_spec);
    dot /= 2;  // two dimensions: normalised to [0, 1]
    const double score = reference::Truncate(reference::kMaxNodeScore * (1 - dot));
    return {score, TightestGpus(state.cluster().node(id), s, shape)};
  }
};
}  // namespace

std::unique_ptr<PlacementPolicy> MakeDotProductPolicy() {
  return std::make_unique<DotProductPolicy>();
}

}  // namespace tessera
