#include "sched/placement/placement_policy.h"

namespace tessera {

std::uint16_t GpusWithFree(const Node& node, const NodeState& s, std::int32_t milli) {
  std::uint16_t mask = 0;
  for (int g = 0; g < node.gpu_count; ++g) {
    if (s.gpu_free[g] >= milli) mask |= static_cast<std::uint16_t>(1U << g);
  }
  return mask;
}

std::uint16_t TightestGpus(const Node& node, const NodeState& s, const TaskShape& shape) {
  if (shape.gpus == 0) return 0;
  if (shape.IsShare()) {
    int best = -1;
    for (int g = 0; g < node.gpu_count; ++g) {
      if (s.gpu_free[g] >= shape.gpu_milli && (best < 0 || s.gpu_free[g] < s.gpu_free[best]))
        best = g;
    }
    return best < 0 ? 0 : static_cast<std::uint16_t>(1U << best);
  }
  std::uint16_t mask = 0;
  int taken = 0;
  for (int g = 0; g < node.gpu_count && taken < shape.gpus; ++g) {
    if (s.gpu_free[g] >= shape.gpu_milli) {
      mask |= static_cast<std::uint16_t>(1U << g);
      ++taken;
    }
  }
  return taken == shape.gpus ? mask : 0;
}

}  // namespace tessera
