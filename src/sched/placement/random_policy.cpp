// random: every feasible node scores the same, so the placer's seeded tie-break picks one
// uniformly; a share goes to a uniformly drawn GPU that fits.
#include "sched/placement/policies.h"

namespace tessera {

namespace {
class RandomPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "random"; }
  bool deterministic() const override { return false; }
  NodeScore Score(const ClusterState& state, NodeId id, const TaskShape& shape,
                  Rng& rng) const override {
    const auto& node = state.cluster().node(id);
    const auto& s = state.node(id);
    if (!shape.IsShare()) return {0, TightestGpus(node, s, shape)};
    const std::uint16_t fits = GpusWithFree(node, s, shape.gpu_milli);
    auto pick = rng.Uniform(static_cast<std::uint64_t>(std::popcount(fits)));
    for (int g = 0; g < node.gpu_count; ++g) {
      if ((fits >> g & 1) && pick-- == 0) return {0, static_cast<std::uint16_t>(1U << g)};
    }
    return {0, 0};
  }
};
}  // namespace

std::unique_ptr<PlacementPolicy> MakeRandomPolicy() { return std::make_unique<RandomPolicy>(); }

}  // namespace tessera
