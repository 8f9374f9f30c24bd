#include "agent/agent_metrics.h"

#include <map>

#include "agent/agent.h"

namespace tessera {

namespace {

// Round trips from a millisecond to a minute and a half (a long poll waits up to its interval).
constexpr double kHeartbeatBucketsSeconds[] = {0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5,
                                               1,     1.5,   2,    5,    10,  30,   90};

}  // namespace

AgentMetrics::AgentMetrics() : heartbeat_seconds_(kHeartbeatBucketsSeconds) {}

void AgentMetrics::Heartbeat(double seconds, bool ok) {
  std::lock_guard lock(mu_);
  heartbeat_seconds_.Observe(seconds);
  heartbeat_failures_ += ok ? 0 : 1;
}

void AgentMetrics::Write(MetricsWriter& out) const {
  std::lock_guard lock(mu_);
  out.Family("tessera_agent_heartbeat_duration_seconds", MetricType::kHistogram,
             "Round trip of one heartbeat to the controller, its long-poll wait included.");
  out.Sample({}, heartbeat_seconds_);
  out.Single("tessera_agent_heartbeat_failures_total", MetricType::kCounter,
             "Heartbeats that got no answer or an answer other than 200.",
             static_cast<double>(heartbeat_failures_));
}

void WriteAgentGauges(const AgentGauges& g, MetricsWriter& out) {
  out.Family("tessera_node_ready", MetricType::kGauge,
             "1 when the agent's last heartbeat for the node was answered recently.");
  for (const auto& n : g.nodes) out.Sample({{"node", n.name}}, n.ready ? 1 : 0);
  out.Family("tessera_node_tasks", MetricType::kGauge, "Tasks the agent runs on the node.");
  for (const auto& n : g.nodes) out.Sample({{"node", n.name}}, n.tasks);
  using Gpu = AgentGauges::Gpu;
  auto each = [&](const char* name, const char* help, auto value) {
    out.Family(name, MetricType::kGauge, help);
    for (const Gpu& gpu : g.gpus) {
      out.Sample({{"node", gpu.node},
                  {"gpu", std::to_string(gpu.index)},
                  {"model", gpu.model},
                  {"simulated", gpu.simulated ? "true" : "false"}},
                 value(gpu));
    }
  };
  each("tessera_gpu_allocated",
       "Share of the GPU held by live tasks, 0..1 (a whole GPU is 1, a half share 0.5).",
       [](const Gpu& gpu) { return gpu.allocated_milli / 1000.0; });
  each("tessera_gpu_utilization_ratio",
       "GPU busy time ratio, 0..1 (DCGM_FI_DEV_GPU_UTIL / 100); simulated GPUs report the share "
       "held by tasks with a live process.",
       [](const Gpu& gpu) { return gpu.busy_milli / 1000.0; });
  each("tessera_gpu_memory_used_bytes",
       "GPU memory in use (DCGM_FI_DEV_FB_USED, in bytes); simulated GPUs report the busy share "
       "of their memory.",
       [](const Gpu& gpu) {
         return static_cast<double>(gpu.memory_mib) * 1048576.0 * gpu.busy_milli / 1000.0;
       });
  each("tessera_gpu_memory_total_bytes", "GPU memory of the device, in bytes.",
       [](const Gpu& gpu) { return static_cast<double>(gpu.memory_mib) * 1048576.0; });
}

std::string Agent::MetricsText() {
  AgentGauges g;
  const Tick now = NowMs();
  // Answered within three intervals (and the controller's own slack of two seconds).
  const bool ready = now - last_heartbeat_ok_ms_.load() <= 3 * heartbeat_interval_ms_ + 2000;
  std::map<std::pair<std::string, int>, std::pair<std::int32_t, std::int32_t>> held;
  std::map<std::string, int> tasks;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, t] : tasks_) {
      if (t.state != ReportedState::kRunning) continue;
      ++tasks[t.node];
      for (int gpu : t.launch.gpus) {
        auto& [allocated, busy] = held[{t.node, gpu}];
        allocated += t.launch.gpu_milli;
        if (!t.alive.empty()) busy += t.launch.gpu_milli;
      }
    }
  }
  for (const ServedNode& node : nodes_) {
    g.nodes.push_back({node.name, ready, tasks[node.name]});
    for (const GpuInfo& info : node.inventory.gpus) {
      AgentGauges::Gpu gpu;
      gpu.node = node.name;
      gpu.index = info.index;
      gpu.model = info.model;
      gpu.simulated = node.inventory.simulated;
      gpu.memory_mib = info.memory_mib;
      if (auto it = held.find({node.name, info.index}); it != held.end()) {
        gpu.allocated_milli = std::min<std::int32_t>(it->second.first, 1000);
        gpu.busy_milli = std::min<std::int32_t>(it->second.second, 1000);
      }
      g.gpus.push_back(std::move(gpu));
    }
  }
  MetricsWriter out;
  metrics_.Write(out);
  WriteAgentGauges(g, out);
  return out.Take();
}

}  // namespace tessera
