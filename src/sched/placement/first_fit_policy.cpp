// firstfit: the feasible node with the lowest index; the classic baseline of batch schedulers.
#include "sched/placement/policies.h"

namespace tessera {

namespace {
class FirstFitPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "firstfit"; }
  NodeScore Score(const ClusterState& state, NodeId id, const TaskShape& shape,
                  Rng&) const override {
    return {-static_cast<double>(id.value),
            TightestGpus(state.cluster().node(id), state.node(id), shape)};
  }
};
}  // namespace

std::unique_ptr<PlacementPolicy> MakeFirstFitPolicy() { return std::make_unique<FirstFitPolicy>(); }

}  // namespace tessera
