// GPU use (utilisation, memory) as the agents measure it: each agent's /metrics read once, so
// an agent emulating a thousand nodes is one request. `tessera top` asks the agents itself;
// the controller's GET /v1/usage (ui_routes.h) asks them for the dashboard, which may reach
// only the controller. Simulated GPUs' "use" is the share their tasks hold while a process
// lives (agent_metrics.h), not a measurement.
//
// Thread-safety: ScrapeGpuUse is reentrant; GpuUsageCache is thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "server/agent_client.h"

namespace tessera {

struct GpuUse {
  double utilization = 0;  // 0..1
  double memory_used_bytes = 0;
  double memory_total_bytes = 0;
};

// (node, GPU index) -> use.
using GpuUseMap = std::map<std::pair<std::string, int>, GpuUse>;

// The agent URLs of the nodes of GET /v1/nodes that are not Lost.
std::set<std::string> AgentUrlsOf(const nlohmann::json& nodes);

// Reads every agent's /metrics (2 s to connect, `read_timeout_s` to answer); the agents that
// did not answer are appended to `unreachable`.
GpuUseMap ScrapeGpuUse(const std::set<std::string>& agent_urls, const AgentClientTls& tls,
                       std::vector<std::string>* unreachable, int read_timeout_s = 10);

// The last scrape, kept for `max_age`, so that many dashboards cost the agents one scrape.
class GpuUsageCache {
 public:
  // `tls` (outliving the cache) is read at each scrape.
  GpuUsageCache(std::chrono::milliseconds max_age, const AgentClientTls* tls)
      : max_age_(max_age), tls_(tls) {}
  // {"gpus": [{node, gpu, utilization, memoryUsedBytes, memoryTotalBytes}], "unreachable":
  // [url], "ageMs"}; scrapes again when the last one is older than max_age.
  nlohmann::json Get(const nlohmann::json& nodes);

 private:
  using Clock = std::chrono::steady_clock;
  const std::chrono::milliseconds max_age_;
  const AgentClientTls* tls_;
  std::mutex mu_;  // held through a scrape: concurrent callers wait for it, not scrape again
  Clock::time_point taken_{};
  nlohmann::json last_;
};

}  // namespace tessera
