// bestfit, as the FGD authors' simulator scores it (best_fit_score.go): leftover =
// 0.5·(free CPU − request)/128 cores + 0.5·(free GPU milli − request)/8000, score =
// int((1 − leftover)·100). The plugin then min-max normalises the scores of the feasible nodes
// to [0, 100]; on nodes of at most 128 cores and 8 GPUs the raw scores already span at most
// 100 integers, so that map is one-to-one and increasing and changes no choice. GPUs: the
// tightest (best-fit) GPU for a share, the lowest-numbered free GPUs otherwise.
#include "sched/placement/policies.h"
#include "sched/placement/reference_scores.h"

namespace tessera {

namespace {
class BestFitPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "bestfit"; }
  bool scores_from_state() const override { return true; }
  NodeScore Score(const ClusterState& state, NodeId id, const TaskShape& shape,
                  Rng&) const override {
    const auto& s = state.node(id);
    const auto need = shape.Total();
    // Summed in the reference's order: CPU term, then GPU term.
    double leftover = 0;
    leftover +=
        static_cast<double>(s.free.cpu_milli - need.cpu_milli) / reference::kMaxSpecCpuMilli * 0.5;
    leftover += static_cast<double>(s.free.gpu_milli - need.gpu_milli) /
                static_cast<double>(reference::kMaxSpecGpuMilli) * 0.5;
    const double score = reference::Truncate((1.0 - leftover) * reference::kMaxNodeScore);
    return {score, TightestGpus(state.cluster().node(id), s, shape)};
  }
};
}  // namespace

std::unique_ptr<PlacementPolicy> MakeBestFitPolicy() { return std::make_unique<BestFitPolicy>(); }

}  // namespace tessera
