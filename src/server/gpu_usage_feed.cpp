#include "server/gpu_usage_feed.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "server/controller_state.h"

namespace tessera {

namespace {

// Why `r` from `node` cannot be taken, or "".
std::string Problem(const ControllerState& state, const std::string& node,
                    const GpuUsageReport& r) {
  if (!std::isfinite(r.utilization) || r.utilization < 0 || r.utilization > 1)
    return "utilization " + std::to_string(r.utilization) + " is outside [0, 1]";
  auto n = state.nodes.find(node);
  if (n == state.nodes.end()) return "unknown node";
  if (r.gpu < 0 || r.gpu >= n->second.rec.gpu_count)
    return "GPU " + std::to_string(r.gpu) + " is not one of the node's " +
           std::to_string(n->second.rec.gpu_count);
  if (r.memory_used_bytes < 0) return "memoryUsedBytes is negative";
  if (r.task_id == 0) return "";
  auto t = state.tasks.find(r.task_id);
  if (t == state.tasks.end() || t->second.node != node || !IsLive(t->second.state))
    return "task " + std::to_string(r.task_id) + " is not running on this node";
  if (std::ranges::find(t->second.gpus, r.gpu) == t->second.gpus.end())
    return "task " + std::to_string(r.task_id) + " does not hold GPU " + std::to_string(r.gpu);
  return "";
}

}  // namespace

std::vector<std::string> RecordGpuUsageLocked(ControllerState& state, GpuUsageFeed& feed,
                                              const std::string& node,
                                              const std::vector<GpuUsageReport>& reports, Tick now,
                                              Tick window_ms) {
  std::vector<std::string> ignored;
  if (now - feed.last_pruned >= kSecond) {
    feed.last_pruned = now;
    std::erase_if(feed.tasks, [&](const auto& kv) {
      auto t = state.tasks.find(kv.first.first);
      return t == state.tasks.end() || !IsLive(t->second.state);
    });
  }
  for (const GpuUsageReport& r : reports) {
    if (std::string why = Problem(state, node, r); !why.empty()) {
      ignored.push_back("usage report of node " + node + " ignored: " + why);
      spdlog::info("{}", ignored.back());
      continue;
    }
    const GpuUsageSample sample{now, r.utilization, r.memory_used_bytes};
    if (r.task_id == 0) {
      feed.devices[{node, r.gpu}] = sample;
      continue;
    }
    auto& window = feed.tasks[{r.task_id, r.gpu}];
    window.push_back(sample);
    while (!window.empty() && window.front().at <= now - window_ms) window.pop_front();
  }
  return ignored;
}

std::optional<double> TaskWindowMax(const GpuUsageFeed& feed, std::int64_t task_id, Tick since) {
  std::optional<double> out;
  for (auto it = feed.tasks.lower_bound({task_id, std::numeric_limits<int>::min()});
       it != feed.tasks.end() && it->first.first == task_id; ++it) {
    for (const GpuUsageSample& s : it->second) {
      if (s.at > since) out = std::max(out.value_or(0.0), s.utilization);
    }
  }
  return out;
}

std::vector<DeviceUse> DeviceUsesLocked(const ControllerState& state, const GpuUsageFeed& feed) {
  std::map<std::pair<std::string, int>, DeviceUse> by_device;
  for (const auto& [key, window] : feed.tasks) {
    auto t = state.tasks.find(key.first);
    if (t == state.tasks.end() || !IsLive(t->second.state) || window.empty()) continue;
    DeviceUse& d = by_device[{t->second.node, key.second}];
    d.utilization = std::min(1.0, d.utilization + window.back().utilization);
    d.memory_used_bytes += static_cast<double>(window.back().memory_used_bytes);
    for (const GpuUsageSample& s : window)
      d.window_max_utilization = std::max(d.window_max_utilization, s.utilization);
  }
  for (const auto& [key, s] : feed.devices) {
    DeviceUse& d = by_device[key];
    d.utilization = s.utilization;  // the device as measured wins over what tasks said
    d.memory_used_bytes = static_cast<double>(s.memory_used_bytes);
    d.window_max_utilization = std::max(d.window_max_utilization, s.utilization);
  }
  std::vector<DeviceUse> out;
  for (auto& [key, d] : by_device) {
    d.node = key.first;
    d.gpu = key.second;
    auto n = state.nodes.find(d.node);
    d.simulated = n != state.nodes.end() && n->second.rec.simulated;
    out.push_back(std::move(d));
  }
  return out;
}

void WriteDeviceUses(const std::vector<DeviceUse>& uses, MetricsWriter& out) {
  auto each = [&](const char* name, const char* help, auto value) {
    out.Family(name, MetricType::kGauge, help);
    for (const DeviceUse& d : uses) {
      MetricLabels labels = {{"node", d.node}, {"gpu", std::to_string(d.gpu)}};
      if (d.simulated) labels.push_back({"simulated", "true"});
      out.Sample(labels, value(d));
    }
  };
  each("tessera_gpu_utilization_ratio",
       "GPU utilisation the agents report: NVML's, or what the tasks wrote to their usage files "
       "(simulated GPUs: the simulated engine's busy fraction).",
       [](const DeviceUse& d) { return d.utilization; });
  each("tessera_gpu_memory_used_bytes", "GPU memory in use as the agents report it, in bytes.",
       [](const DeviceUse& d) { return d.memory_used_bytes; });
  each("tessera_gpu_utilization_window_max_ratio",
       "The highest utilisation its tasks reported over the usage window.",
       [](const DeviceUse& d) { return d.window_max_utilization; });
}

}  // namespace tessera
