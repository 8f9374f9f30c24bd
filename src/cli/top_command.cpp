// `tessera top nodes|jobs`: GPU allocation and use, like `kubectl top`. Allocation comes from
// the controller (GET /v1/nodes, /v1/jobs); use from each agent's own /metrics (utilisation
// and memory per GPU, agent_metrics.h), asked once per agent, so a tessera-agent emulating a
// thousand nodes is one request. Where the agents reported usage in their heartbeats (the
// controller's gpuUsage per node: NVML, or what the tasks wrote to their usage files, e.g. the
// simulated engine's busy fraction), nodes show that instead (docs/gpu-usage.md). Simulated
// GPUs say so; without a report their "use" is the share their tasks hold while a process
// lives, not a measurement.

#include <algorithm>
#include <iostream>
#include <map>
#include <set>

#include "cli/commands.h"
#include "cli/live_client.h"
#include "cli/live_commands.h"
#include "server/gpu_usage.h"

namespace tessera::cli {

namespace {

using Json = nlohmann::json;

struct TopFlags {
  ClusterFlags cluster;
  std::string what;
  std::string output;
  int limit = 200;
};

std::string Percent(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100 * ratio);
  return buf;
}

std::string GiB(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fGi", bytes / (1024.0 * 1024 * 1024));
  return buf;
}

void WarnUnreachable(const std::vector<std::string>& unreachable) {
  for (const auto& url : unreachable)
    std::cerr << "warning: the agent at " << url << " did not answer; its GPUs show no use\n";
}

Status TopNodes(ApiClient& api, OutputFormat format) {
  auto doc = JsonOf(api.Get("/v1/nodes"));
  if (!doc) return std::unexpected(doc.error());
  const Json& nodes = (*doc)["nodes"];
  std::vector<std::string> unreachable;
  const auto use = ScrapeGpuUse(AgentUrlsOf(nodes), {api.ca_file(), "", ""}, &unreachable);
  Json out = Json::array();
  std::vector<std::vector<std::string>> rows;
  for (const auto& n : nodes) {
    const std::string name = n.value("name", "");
    const int count = n.value("gpuCount", 0);
    GpuUse sum;
    for (int g = 0; g < count; ++g) {
      if (auto it = use.find({name, g}); it != use.end()) {
        sum.utilization += it->second.utilization;
        sum.memory_used_bytes += it->second.memory_used_bytes;
        sum.memory_total_bytes += it->second.memory_total_bytes;
      }
    }
    // The controller's feed (what the tasks or NVML reported in heartbeats) replaces the
    // agent's allocated-share stand-in where there is one.
    const bool reported = n.contains("gpuUsage") && n["gpuUsage"].is_array();
    if (reported) {
      sum.utilization = sum.memory_used_bytes = 0;
      for (const auto& g : n["gpuUsage"]) {
        sum.utilization += g.value("utilization", 0.0);
        sum.memory_used_bytes += g.value("memoryUsedBytes", 0.0);
      }
    }
    const double allocated = n.value("gpusAllocated", 0.0);
    const double util = count > 0 ? sum.utilization / count : 0;
    const bool simulated = n.value("simulated", false);
    out.push_back({{"name", name},
                   {"status", n.value("status", "")},
                   {"gpus", count},
                   {"gpusAllocated", allocated},
                   {"gpuUtilization", util},
                   {"gpuMemoryUsedBytes", sum.memory_used_bytes},
                   {"gpuMemoryTotalBytes", sum.memory_total_bytes},
                   {"simulated", simulated},
                   {"usageSource", reported ? "reported" : "allocated-share"}});
    rows.push_back({name, n.value("status", ""), Number(allocated) + "/" + std::to_string(count),
                    Percent(count > 0 ? allocated / count : 0), Percent(util),
                    GiB(sum.memory_used_bytes) + "/" + GiB(sum.memory_total_bytes),
                    n.value("gpuModel", "") + (simulated ? " (simulated)" : "")});
  }
  WarnUnreachable(unreachable);
  if (format != OutputFormat::kTable) {
    PrintStructured(out, format);
  } else if (rows.empty()) {
    std::cout << "No nodes registered yet.\n";
  } else {
    PrintTable({"NAME", "STATUS", "GPUS", "ALLOCATED", "GPU-UTIL", "GPU-MEMORY", "MODEL"}, rows);
  }
  return {};
}

Status TopJobs(ApiClient& api, OutputFormat format, int limit) {
  auto nodes = JsonOf(api.Get("/v1/nodes"));
  if (!nodes) return std::unexpected(nodes.error());
  std::map<std::string, bool> simulated;
  for (const auto& n : (*nodes)["nodes"])
    simulated[n.value("name", "")] = n.value("simulated", false);
  std::vector<std::string> unreachable;
  const auto use =
      ScrapeGpuUse(AgentUrlsOf((*nodes)["nodes"]), {api.ca_file(), "", ""}, &unreachable);
  auto list = JsonOf(api.Get("/v1/jobs?phase=Running&limit=" + std::to_string(limit)));
  if (!list) return std::unexpected(list.error());
  Json out = Json::array();
  std::vector<std::vector<std::string>> rows;
  for (const auto& j : (*list)["jobs"]) {
    const std::string queue = j.value("queue", ""), name = j.value("name", "");
    auto detail = JsonOf(api.Get("/v1/jobs/" + PathOf(queue, name)));
    if (!detail) continue;  // finished or purged meanwhile
    int gpus = 0;
    bool any_simulated = false;
    std::set<std::string> on;
    GpuUse sum;
    for (const auto& t : (*detail)["taskList"]) {
      if (t.value("state", "") != "Running") continue;
      const std::string node = t.value("node", "");
      on.insert(node);
      any_simulated |= simulated[node];
      for (const auto& g : t["gpus"]) {
        ++gpus;
        if (auto it = use.find({node, g.get<int>()}); it != use.end()) {
          sum.utilization += it->second.utilization;
          sum.memory_used_bytes += it->second.memory_used_bytes;
        }
      }
    }
    const double util = gpus > 0 ? sum.utilization / gpus : 0;
    out.push_back({{"queue", queue},
                   {"name", name},
                   {"kind", j.value("kind", "")},
                   {"gpus", j.value("gpus", 0.0)},
                   {"gpuUtilization", util},
                   {"gpuMemoryUsedBytes", sum.memory_used_bytes},
                   {"nodes", on.size()},
                   {"simulated", any_simulated}});
    rows.push_back({queue, name, j.value("kind", ""), Number(j.value("gpus", 0.0)), Percent(util),
                    GiB(sum.memory_used_bytes), std::to_string(on.size()),
                    any_simulated ? "simulated" : "nvml"});
  }
  WarnUnreachable(unreachable);
  if (format != OutputFormat::kTable) {
    PrintStructured(out, format);
  } else if (rows.empty()) {
    std::cout << "No running jobs.\n";
  } else {
    PrintTable({"QUEUE", "NAME", "KIND", "GPUS", "GPU-UTIL", "GPU-MEMORY", "NODES", "GPU-SOURCE"},
               rows);
  }
  return {};
}

Status RunTop(const TopFlags& f) {
  auto format = ParseOutput(f.output);
  if (!format) return std::unexpected(format.error());
  if (f.what != "nodes" && f.what != "node" && f.what != "jobs" && f.what != "job")
    return InvalidArgument("top " + f.what + ": expected nodes or jobs");
  auto url = ResolveServer(f.cluster);
  if (!url) return std::unexpected(url.error());
  ApiClient api(*url);
  return f.what.starts_with("node") ? TopNodes(api, *format) : TopJobs(api, *format, f.limit);
}

}  // namespace

void RegisterTopCommand(CLI::App& app) {
  auto flags = std::make_shared<TopFlags>();
  auto* cmd = app.add_subcommand("top", "GPU allocation and use of nodes or running jobs");
  cmd->add_option("what", flags->what, "nodes | jobs")->required();
  cmd->add_option("--limit", flags->limit, "jobs: at most this many running jobs")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  AddClusterFlags(cmd, &flags->cluster);
  AddOutputFlag(cmd, &flags->output);
  cmd->callback([flags] { SetExitCode(RunOrReport([&] { return RunTop(*flags); })); });
}

}  // namespace tessera::cli
