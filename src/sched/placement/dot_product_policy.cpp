// dotprod (Tetris, Grandl et al., SIGCOMM'14, as used by the FGD paper): the node, and for a
// share the GPU, whose free-resource vector has the smallest dot product with the request,
// both normalised by the node's capacity over (CPU, memory, GPU). Score = −dot.
#include "sched/placement/policies.h"

namespace tessera {

namespace {
double Ratio(std::int64_t a, std::int64_t b) {
  return b > 0 ? static_cast<double>(a) / static_cast<double>(b) : 0.0;
}

class DotProductPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "dotprod"; }
  NodeScore Score(const ClusterState& state, NodeId id, const TaskShape& shape,
                  Rng&) const override {
    const auto& node = state.cluster().node(id);
    const auto& s = state.node(id);
    const auto& cap = node.capacity;
    const double cpu = Ratio(s.free.cpu_milli, cap.cpu_milli) * Ratio(shape.cpu_milli, cap.cpu_milli);
    const double mem =
        Ratio(s.free.memory_mib, cap.memory_mib) * Ratio(shape.memory_mib, cap.memory_mib);
    if (!shape.IsShare()) {
      const double gpu = Ratio(s.free.gpu_milli, cap.gpu_milli) *
                         Ratio(shape.gpus * std::int64_t{shape.gpu_milli}, cap.gpu_milli);
      return {-(cpu + mem + gpu), TightestGpus(node, s, shape)};
    }
    // For a share, the GPU dimension is that one GPU: free milli ÷ 1000 × request ÷ 1000.
    NodeScore best{-1e300, 0};
    for (int g = 0; g < node.gpu_count; ++g) {
      if (s.gpu_free[g] < shape.gpu_milli) continue;
      const double gpu = Ratio(s.gpu_free[g], kMilliPerGpu) * Ratio(shape.gpu_milli, kMilliPerGpu);
      const double score = -(cpu + mem + gpu);
      if (best.gpu_mask == 0 || score > best.score) best = {score, static_cast<std::uint16_t>(1U << g)};
    }
    return best;
  }
};
}  // namespace

std::unique_ptr<PlacementPolicy> MakeDotProductPolicy() {
  return std::make_unique<DotProductPolicy>();
}

}  // namespace tessera
