// The GPU-usage file a task may write (docs/gpu-usage.md): the agent names it in the task's
// environment as TESSERA_GPU_USAGE_FILE and reads it at every heartbeat, which is how
// simulated GPUs get a utilisation and a memory figure (tessera-engine-sim writes its busy
// fraction and KV-cache memory there) and how a program can say more than NVML sees.
//
//   {"utilization": 0.42, "memoryUsedBytes": 2147483648}
//
// utilization: the share of each of the task's GPUs it keeps busy, 0..1 (for a fractional
// GPU: of the whole device); memoryUsedBytes: bytes it holds on each of them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tessera {

inline constexpr const char* kGpuUsageFileEnv = "TESSERA_GPU_USAGE_FILE";

struct GpuUsageReading {
  double utilization = 0;
  std::int64_t memory_used_bytes = 0;
  friend bool operator==(const GpuUsageReading&, const GpuUsageReading&) = default;
};

std::string GpuUsageFileText(const GpuUsageReading& reading);

// Parses and checks a usage file: utilization within [0, 1], memoryUsedBytes within
// [0, memory_limit_bytes] (the GPU's memory). The error names the field and the reason.
Result<GpuUsageReading> ParseGpuUsageFile(std::string_view text, std::int64_t memory_limit_bytes);

}  // namespace tessera
