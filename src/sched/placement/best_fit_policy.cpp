// bestfit: the node left with the least capacity after placement, weighing CPU and GPU
// equally: leftover = 0.5·(free CPU − request)/128 cores + 0.5·(free GPU milli − request)/8000,
// as in the FGD paper's simulator (its node scale: 128 cores, 8 GPUs). Score = −leftover.
#include "sched/placement/policies.h"

namespace tessera {

namespace {
class BestFitPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "bestfit"; }
  NodeScore Score(const ClusterState& state, NodeId id, const TaskShape& shape,
                  Rng&) const override {
    const auto& s = state.node(id);
    const auto need = shape.Total();
    const double cpu_left = static_cast<double>(s.free.cpu_milli - need.cpu_milli) / 128000.0;
    const double gpu_left = static_cast<double>(s.free.gpu_milli - need.gpu_milli) / 8000.0;
    return {-(0.5 * cpu_left + 0.5 * gpu_left), TightestGpus(state.cluster().node(id), s, shape)};
  }
};
}  // namespace

std::unique_ptr<PlacementPolicy> MakeBestFitPolicy() { return std::make_unique<BestFitPolicy>(); }

}  // namespace tessera
