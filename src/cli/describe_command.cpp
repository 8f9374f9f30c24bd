// `tessera describe job NAME`: everything about one job: its spec in short, its units (what
// the scheduler places), every task of every attempt with node, GPUs, state and exit code,
// and its recent events.
#include <iostream>
#include <optional>

#include "cli/commands.h"
#include "cli/describe_service.h"
#include "cli/live_client.h"
#include "cli/live_commands.h"

namespace tessera::cli {

namespace {

using Json = nlohmann::json;

struct DescribeFlags {
  ClusterFlags cluster;
  std::string what;
  std::string name;
  std::string queue;
  std::string output;
};

// The elements of `list` joined by `sep`; a multi-line argument shows its first line only.
std::string Join(const Json& list, const std::string& sep) {
  std::string s;
  for (const auto& v : list) {
    if (!s.empty()) s += sep;
    std::string item = v.is_string() ? v.get<std::string>() : v.dump();
    if (auto nl = item.find('\n'); nl != std::string::npos) item = item.substr(0, nl) + " ...";
    s += item;
  }
  return s;
}

// When the last preemption was and, as the controller's event names it, whose room it made.
std::optional<std::string> PreemptedLine(const Json& events) {
  for (auto it = events.rbegin(); it != events.rend(); ++it) {
    if (it->value("type", "") != "JobPreempted") continue;
    const std::string m = it->value("message", ""), mark = "; preempted by ";
    const auto at = m.rfind(mark);
    const std::string when = Clock(it->value("timeMs", std::int64_t{0}));
    if (at == std::string::npos) return when + " (" + m + ")";
    return when + " by " + m.substr(at + mark.size()) + " (" + m.substr(0, at) + ")";
  }
  return std::nullopt;
}

// The isolation the newest started task got, as its agent reported it (TaskStarted's
// "; isolation: ..."): which of cgroup v2 and CUDA MPS were applied, and why not the rest.
std::optional<std::string> IsolationLine(const Json& events) {
  for (auto it = events.rbegin(); it != events.rend(); ++it) {
    if (it->value("type", "") != "TaskStarted") continue;
    const std::string m = it->value("message", ""), mark = "; isolation: ";
    if (const auto at = m.rfind(mark); at != std::string::npos) return m.substr(at + mark.size());
  }
  return std::nullopt;
}

void PrintJob(const Json& j) {
  const Json& spec = j["spec"]["spec"];
  auto line = [](const std::string& k, const std::string& v) {
    std::cout << k << std::string(k.size() < 12 ? 12 - k.size() : 1, ' ') << v << "\n";
  };
  line("Name:", j.value("name", ""));
  line("Queue:", j.value("queue", ""));
  line("Kind:", j.value("kind", ""));
  line("Phase:", j.value("phase", ""));
  if (j.contains("message")) line("Message:", j.value("message", ""));
  line("Priority:",
       std::to_string(j.value("priority", 0)) +
           (spec.value("preemptible", true) ? " (preemptible)" : " (not preemptible)"));
  line("Tasks:",
       std::to_string(j.value("tasks", 0)) + " (" + Number(j.value("gpus", 0.0)) + " GPUs in all)");
  line("Attempt:", std::to_string(j.value("attempt", 0)) + " (restarts " +
                       std::to_string(j.value("restarts", 0)) + " of " +
                       std::to_string(j.value("maxRestarts", 0)) + ")");
  line("Submitted:", Clock(j.value("submitTimeMs", std::int64_t{0})) + " (" +
                         Age(j.value("submitTimeMs", std::int64_t{0})) + " ago)");
  line("Started:", Clock(j.value("startTimeMs", std::int64_t{0})));
  line("Finished:", Clock(j.value("finishTimeMs", std::int64_t{0})));
  if (spec.contains("command")) line("Command:", Join(spec["command"], " "));
  if (spec.contains("roles")) {
    for (const auto& r : spec["roles"]) {
      line("Role:", r.value("name", "") + " x" + std::to_string(r.value("workers", 0)) + ": " +
                        Join(r["command"], " "));
    }
  }
  if (spec.value("shell", false)) line("Shell:", "yes (/bin/sh -c)");
  line("Grace:", std::to_string(spec.value("gracePeriodSeconds", 0)) + "s");
  if (j["units"].size() > 1) {
    int by_phase_pending = 0, running = 0, done = 0, other = 0;
    for (const auto& u : j["units"]) {
      const std::string p = u.value("phase", "");
      if (p == "Pending")
        ++by_phase_pending;
      else if (p == "Running")
        ++running;
      else if (p == "Succeeded")
        ++done;
      else
        ++other;
    }
    line("Units:", std::to_string(by_phase_pending) + " pending, " + std::to_string(running) +
                       " running, " + std::to_string(done) + " succeeded, " +
                       std::to_string(other) + " other");
  } else if (!j["units"].empty() && j["units"][0].contains("message")) {
    line("Reason:", j["units"][0].value("message", ""));
  }
  if (j.contains("autoscaling")) {  // docs/autoscaling.md
    const auto& a = j["autoscaling"];
    const std::string policy = a.value("policy", "hpa");
    line("Autoscaling:", (policy == "hpa" ? "" : policy + ": ") + a.value("metric", "") +
                             " target " + Number(a.value("target", 0.0)) + " per replica; " +
                             std::to_string(a.value("desiredReplicas", 0)) +
                             " replica(s) wanted, " +
                             std::to_string(a.value("drainingReplicas", 0)) + " draining; last " +
                             Number(a.value("lastValue", 0.0)) + " over " +
                             std::to_string(a.value("measuredReplicas", 0)));
  }
  if (auto preempted = PreemptedLine(j["events"])) line("Preempted:", *preempted);
  if (auto isolation = IsolationLine(j["events"])) line("Isolation:", *isolation);
  std::cout << "\nTasks:\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& t : j["taskList"]) {
    std::string gpus = Join(t["gpus"], ",");
    if (t.contains("gpuMilli")) gpus += " (" + Number(t.value("gpuMilli", 0) / 1000.0) + ")";
    if (t.value("simulatedGpus", false) && !t["gpus"].empty()) gpus += " sim";
    if (t.value("oversold", false)) gpus += " oversold";
    const std::string state = t.value("state", "");
    std::string exit = "-";
    if (state == "Succeeded" || state == "Failed" || state == "Stopped") {
      exit = std::to_string(t.value("exitCode", 0));
      if (t.value("signal", 0) != 0)
        exit += " (signal " + std::to_string(t.value("signal", 0)) + ")";
    }
    rows.push_back({"  " + std::to_string(t.value("rank", 0)),
                    std::to_string(t.value("attempt", 0)), t.value("node", ""),
                    gpus.empty() ? "-" : gpus,
                    state + (t.value("draining", false) ? " (draining)" : ""),
                    t.value("pid", 0) ? std::to_string(t.value("pid", 0)) : "-", exit,
                    Clock(t.value("startedMs", std::int64_t{0})), t.value("message", "")});
  }
  if (rows.empty()) {
    std::cout << "  (none yet)\n";
  } else {
    PrintTable({"  RANK", "ATTEMPT", "NODE", "GPUS", "STATE", "PID", "EXIT", "STARTED", "MESSAGE"},
               rows);
  }
  std::cout << "\nEvents:\n";
  rows.clear();
  const auto& events = j["events"];
  const std::size_t first = events.size() > 30 ? events.size() - 30 : 0;
  const std::string all =
      "`tessera get events --for job/" + j.value("queue", "") + "/" + j.value("name", "") + "`";
  if (j.contains("eventsCutBeforeMs")) {
    std::cout << "  (events before " + Clock(j.value("eventsCutBeforeMs", std::int64_t{0})) +
                     " were dropped: the controller keeps the newest events only)\n";
  }
  if (first > 0) {
    std::cout << "  (the newest 30 of " << events.size() << " events; all of them: " << all
              << ")\n";
  }
  for (std::size_t i = first; i < events.size(); ++i) {
    const auto& e = events[i];
    rows.push_back({"  " + Clock(e.value("timeMs", std::int64_t{0})), e.value("type", ""),
                    e.value("message", "")});
  }
  if (rows.empty()) {
    std::cout << "  (none since the controller started)\n";
  } else {
    PrintTable({"  TIME", "TYPE", "MESSAGE"}, rows);
  }
}

Status RunDescribe(const DescribeFlags& f) {
  auto format = ParseOutput(f.output);
  if (!format) return std::unexpected(format.error());
  if (f.what != "job" && f.what != "jobs")
    return InvalidArgument("describe " + f.what + ": only `describe job NAME` exists");
  auto url = ResolveServer(f.cluster);
  if (!url) return std::unexpected(url.error());
  ApiClient api(*url);
  auto queue = ResolveJobQueue(api, f.name, f.queue);
  if (!queue) return std::unexpected(queue.error());
  auto job = JsonOf(api.Get("/v1/jobs/" + PathOf(*queue, f.name)));
  if (!job) return std::unexpected(job.error());
  const bool service = job->value("kind", "") == "InferenceService";
  if (service) (*job)["serving"] = ServingView(*job);
  if (*format != OutputFormat::kTable) {
    PrintStructured(*job, *format);
  } else {
    PrintJob(*job);
    if (service) PrintServingView((*job)["serving"]);
  }
  return {};
}

}  // namespace

void RegisterDescribeCommand(CLI::App& app) {
  auto flags = std::make_shared<DescribeFlags>();
  auto* cmd = app.add_subcommand("describe",
                                 "Show one job in detail: tasks, nodes, GPUs, exit codes, events");
  cmd->add_option("what", flags->what, "job")->required();
  cmd->add_option("name", flags->name, "Job name")->required();
  cmd->add_option("--queue", flags->queue,
                  "Queue of the job (needed only when the name is in several)");
  AddClusterFlags(cmd, &flags->cluster);
  AddOutputFlag(cmd, &flags->output);
  cmd->callback([flags] { SetExitCode(RunOrReport([&] { return RunDescribe(*flags); })); });
}

}  // namespace tessera::cli
