// Where the tasks of a workload run: one TaskPlacement per task, in rank order.
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

#include "core/ids.h"
#include "core/resources.h"

namespace tessera {

struct TaskPlacement {
  NodeId node;
  std::uint16_t gpu_mask = 0;  // bit i = GPU i of the node
  std::int32_t gpu_milli = 0;  // taken from each GPU in the mask
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;

  int gpu_count() const { return std::popcount(gpu_mask); }
  Resources Total() const {
    return Resources{cpu_milli, memory_mib, gpu_count() * std::int64_t{gpu_milli}};
  }
  friend bool operator==(const TaskPlacement&, const TaskPlacement&) = default;
};

using Placement = std::vector<TaskPlacement>;

// The milli-GPUs a placement holds.
inline std::int64_t GpuMilliOf(const Placement& p) {
  std::int64_t m = 0;
  for (const auto& t : p) m += t.gpu_count() * std::int64_t{t.gpu_milli};
  return m;
}

}  // namespace tessera
