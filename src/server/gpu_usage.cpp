#include "server/gpu_usage.h"

#include <httplib.h>

#include <cstdlib>

#include "core/metrics_scrape.h"

namespace tessera {

using Json = nlohmann::json;

std::set<std::string> AgentUrlsOf(const Json& nodes) {
  std::set<std::string> agents;
  for (const auto& n : nodes) {
    if (n.value("status", "") != "Lost" && !n.value("agentUrl", "").empty())
      agents.insert(n["agentUrl"].get<std::string>());
  }
  return agents;
}

GpuUseMap ScrapeGpuUse(const std::set<std::string>& agent_urls, const AgentClientTls& tls,
                       std::vector<std::string>* unreachable, int read_timeout_s) {
  GpuUseMap use;
  for (const auto& url : agent_urls) {
    httplib::Client c = AgentClient(url, tls, read_timeout_s);
    c.set_connection_timeout(2, 0);
    auto r = c.Get("/metrics");
    if (!r || r->status != 200) {
      unreachable->push_back(url);
      continue;
    }
    for (const auto& s : ParseMetricsText(
             r->body, {"tessera_gpu_utilization_ratio", "tessera_gpu_memory_used_bytes",
                       "tessera_gpu_memory_total_bytes"})) {
      auto node = s.labels.find("node");
      auto gpu = s.labels.find("gpu");
      if (node == s.labels.end() || gpu == s.labels.end()) continue;
      GpuUse& u = use[{node->second, std::atoi(gpu->second.c_str())}];
      if (s.name == "tessera_gpu_utilization_ratio") u.utilization = s.value;
      if (s.name == "tessera_gpu_memory_used_bytes") u.memory_used_bytes = s.value;
      if (s.name == "tessera_gpu_memory_total_bytes") u.memory_total_bytes = s.value;
    }
  }
  return use;
}

Json GpuUsageCache::Get(const Json& nodes) {
  std::lock_guard lock(mu_);
  const auto now = Clock::now();
  if (!last_.is_null() && now - taken_ < max_age_) {
    Json out = last_;
    out["ageMs"] = std::chrono::duration_cast<std::chrono::milliseconds>(now - taken_).count();
    return out;
  }
  std::vector<std::string> unreachable;
  const GpuUseMap use = ScrapeGpuUse(AgentUrlsOf(nodes), *tls_, &unreachable, 5);
  Json gpus = Json::array();
  for (const auto& [key, u] : use) {
    gpus.push_back({{"node", key.first},
                    {"gpu", key.second},
                    {"utilization", u.utilization},
                    {"memoryUsedBytes", u.memory_used_bytes},
                    {"memoryTotalBytes", u.memory_total_bytes}});
  }
  last_ = {{"gpus", std::move(gpus)}, {"unreachable", unreachable}};
  taken_ = Clock::now();
  Json out = last_;
  out["ageMs"] = 0;
  return out;
}

}  // namespace tessera
