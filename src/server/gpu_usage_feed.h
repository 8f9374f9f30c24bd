// The GPU-usage feed on the controller's side (docs/gpu-usage.md): the usage the agents report
// in their heartbeats, kept per task and GPU over a window (`usage_window`, as the simulator's
// usage_window_seconds: the oversell credit of co-location reads its highest value), and the
// latest figures per device for GET /metrics (tessera_gpu_utilization_ratio{node,gpu},
// tessera_gpu_memory_used_bytes{node,gpu}) and GET /v1/nodes (`tessera top nodes`).
// A report out of range, for a GPU the node does not have, or from a task the node does not
// run is ignored and its reason logged.
//
// Thread-safety: none; called under ControllerCore's mutex.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/metrics_text.h"
#include "core/time.h"
#include "spec/protocol.h"

namespace tessera {

struct ControllerState;

struct GpuUsageSample {
  Tick at = 0;
  double utilization = 0;
  std::int64_t memory_used_bytes = 0;
};

// Per (task, GPU index) for tasks' own reports; per (task 0 = the device, GPU) for NVML's,
// kept by node (the node name in `device`).
struct GpuUsageFeed {
  std::map<std::pair<std::int64_t, int>, std::deque<GpuUsageSample>> tasks;
  std::map<std::pair<std::string, int>, GpuUsageSample> devices;  // NVML: (node, GPU) -> last
  Tick last_pruned = 0;  // windows of tasks that ended are dropped at most once a second
};

// Records `reports` from `node`'s agent; returns one message per report ignored (also logged).
std::vector<std::string> RecordGpuUsageLocked(ControllerState& state, GpuUsageFeed& feed,
                                              const std::string& node,
                                              const std::vector<GpuUsageReport>& reports, Tick now,
                                              Tick window_ms);

// The highest utilisation task `task_id` reported on any of its GPUs after `since`; nullopt
// when it reported none since (co-location then counts it as using all it holds).
std::optional<double> TaskWindowMax(const GpuUsageFeed& feed, std::int64_t task_id, Tick since);

struct DeviceUse {
  std::string node;
  int gpu = 0;
  double utilization = 0;             // now: NVML's, or the sum of its live tasks' latest (≤ 1)
  double memory_used_bytes = 0;       // likewise
  double window_max_utilization = 0;  // the highest of its tasks' windows
  bool simulated = false;
};

// Every GPU with a figure, in (node, GPU) order; tasks that ended are left out.
std::vector<DeviceUse> DeviceUsesLocked(const ControllerState& state, const GpuUsageFeed& feed);

void WriteDeviceUses(const std::vector<DeviceUse>& uses, MetricsWriter& out);

}  // namespace tessera
