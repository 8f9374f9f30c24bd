// `tessera get jobs|nodes|queues`: a table for people, or -o json / -o yaml for scripts.
#include <iostream>

#include "cli/commands.h"
#include "cli/live_client.h"
#include "cli/live_commands.h"

namespace tessera::cli {

namespace {

using Json = nlohmann::json;

struct GetFlags {
  ClusterFlags cluster;
  std::string what;
  std::string output;
  std::string queue;
  std::string phase;
};

Status RunGet(const GetFlags& f) {
  auto format = ParseOutput(f.output);
  if (!format) return std::unexpected(format.error());
  std::string what = f.what;
  if (what == "job") what = "jobs";
  if (what == "node") what = "nodes";
  if (what == "queue") what = "queues";
  if (what != "jobs" && what != "nodes" && what != "queues") {
    return InvalidArgument("get " + f.what + ": expected jobs, nodes or queues");
  }
  auto url = ResolveServer(f.cluster);
  if (!url) return std::unexpected(url.error());
  ApiClient api(*url);
  std::string path = "/v1/" + what;
  if (what == "jobs") {
    std::string sep = "?";
    if (!f.queue.empty()) path += sep + "queue=" + f.queue, sep = "&";
    if (!f.phase.empty()) path += sep + "phase=" + f.phase;
  }
  auto doc = JsonOf(api.Get(path));
  if (!doc) return std::unexpected(doc.error());
  const Json& items = (*doc)[what];
  if (*format != OutputFormat::kTable) {
    PrintStructured(items, *format);
    return {};
  }
  std::vector<std::vector<std::string>> rows;
  if (what == "jobs") {
    for (const auto& j : items) {
      rows.push_back(
          {j.value("queue", ""), j.value("name", ""), j.value("kind", ""), j.value("phase", ""),
           std::to_string(j.value("runningTasks", 0)) + "/" + std::to_string(j.value("tasks", 0)),
           Number(j.value("gpus", 0.0)), std::to_string(j.value("attempt", 0)),
           std::to_string(j.value("restarts", 0)), Age(j.value("submitTimeMs", std::int64_t{0})),
           j.value("message", "")});
    }
    PrintTable({"QUEUE", "NAME", "KIND", "PHASE", "RUNNING", "GPUS", "ATTEMPT", "RESTARTS", "AGE",
                "MESSAGE"},
               rows);
  } else if (what == "nodes") {
    for (const auto& n : items) {
      std::string model = n.value("gpuModel", "");
      if (n.value("simulated", false)) model += " (simulated)";
      std::string status = n.value("status", "");
      if (status == "Ready" && !n.value("schedulable", true)) status += ",NotSchedulable";
      rows.push_back(
          {n.value("name", ""), status,
           Number(n.value("gpusAllocated", 0.0)) + "/" + std::to_string(n.value("gpuCount", 0)),
           model.empty() ? "-" : model, std::to_string(n.value("liveTasks", 0)),
           Number(n.value("lastHeartbeatAgoMs", std::int64_t{0}) / 1000.0) + "s ago",
           n.value("address", "")});
    }
    PrintTable({"NAME", "STATUS", "GPUS", "MODEL", "TASKS", "HEARTBEAT", "ADDRESS"}, rows);
  } else {
    for (const auto& q : items) {
      rows.push_back(
          {q.value("name", ""), std::to_string(q.value("pendingJobs", 0)),
           std::to_string(q.value("activeJobs", 0)), std::to_string(q.value("finishedJobs", 0)),
           Number(q.value("gpusAllocated", 0.0)),
           q.contains("guaranteedGpus") ? Number(q["guaranteedGpus"].get<double>()) : "-"});
    }
    PrintTable({"QUEUE", "PENDING", "ACTIVE", "FINISHED", "GPUS", "GUARANTEED"}, rows);
  }
  return {};
}

}  // namespace

void RegisterGetCommand(CLI::App& app) {
  auto flags = std::make_shared<GetFlags>();
  auto* cmd = app.add_subcommand("get", "List jobs, nodes or queues");
  cmd->add_option("what", flags->what, "jobs | nodes | queues")->required();
  cmd->add_option("--queue", flags->queue, "Only jobs of this queue");
  cmd->add_option("--phase", flags->phase, "Only jobs in this phase (Pending, Running, ...)");
  AddClusterFlags(cmd, &flags->cluster);
  AddOutputFlag(cmd, &flags->output);
  cmd->callback([flags] { SetExitCode(RunOrReport([&] { return RunGet(*flags); })); });
}

}  // namespace tessera::cli
