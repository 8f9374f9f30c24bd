// random: every feasible node scores the same and the placer draws one uniformly (whatever
// PlacementConfig::tie_break says: the reference's RandomScore plugin also gives its top score
// to one uniformly drawn feasible node); a share then goes to a uniformly drawn GPU of that node
// that fits.
#include "sched/placement/policies.h"

namespace tessera {

namespace {
class RandomPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "random"; }
  // Its score is from state (a constant), but every feasible node ties, so the class index
  // would merge the members of every class on each placement: the scan is cheaper (openb: 104
  // against 141 ms of CPU for one seed).
  bool scores_from_state() const override { return false; }
  TieBreak tie_break() const override { return TieBreak::kSeededDraw; }
  NodeScore Score(const ClusterState& state, NodeId id, const TaskShape& shape,
                  Rng&) const override {
    return {0, TightestGpus(state.cluster().node(id), state.node(id), shape)};
  }
  std::uint16_t FinalGpus(const ClusterState& state, NodeId id, const TaskShape& shape,
                          const NodeScore& score, Rng& rng) const override {
    const auto& node = state.cluster().node(id);
    const auto& s = state.node(id);
    if (!shape.IsShare()) return score.gpu_mask;
    const std::uint16_t fits = GpusWithFree(node, s, shape.gpu_milli);
    auto pick = rng.Uniform(static_cast<std::uint64_t>(std::popcount(fits)));
    for (int g = 0; g < node.gpu_count; ++g) {
      if ((fits >> g & 1) && pick-- == 0) return static_cast<std::uint16_t>(1U << g);
    }
    return score.gpu_mask;
  }
};
}  // namespace

std::unique_ptr<PlacementPolicy> MakeRandomPolicy() { return std::make_unique<RandomPolicy>(); }

}  // namespace tessera
