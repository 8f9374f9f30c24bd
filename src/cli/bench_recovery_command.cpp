// `tessera bench recovery`: how long this controller takes to notice a dead node and to have
// every rank of the gang it hit running again, per recovery policy, on an all-in-one loopback
// cluster of emulated nodes (one tessera-agent --simulate-nodes N) running sleep jobs. For each
// policy a fresh cluster (tesserad --recovery POLICY) runs one gang; each round kills the node of
// one of its ranks through the agent's failure drill (POST /v1/emulated/NODE/fail: its processes
// die and its heartbeats stop, as a machine that died) and times
//   detect:   the kill -> the controller's NodeLost event (heartbeat timeout + liveness check);
//   recover:  the kill -> every rank of the new attempt reported running by the agent.
// `--write-preset FILE` writes the means as the constants of `tessera sim --experiment failures
// --recovery-times measured` (src/sim/failures/measured_recovery_times.h).
#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "cli/commands.h"
#include "cli/daemon.h"
#include "cli/live_client.h"
#include "cli/live_commands.h"
#include "core/recovery_mode.h"
#include "core/time.h"

namespace tessera::cli {

namespace {

using Json = nlohmann::json;
using std::chrono::milliseconds;

struct RecoveryBenchFlags {
  int nodes = 1000;
  std::string gpus = "8xH100";
  int workers = 16;
  std::string policies = "requeue,replace,spares";
  int rounds = 3;
  double heartbeat_timeout_s = 10;
  std::string state;
  std::string bin_dir;
  std::string out_path;
  std::string preset_path;
  std::string output;
};

Tick WallMs() {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

// A controller and one agent emulating every node, in `dir`; stopped on destruction.
class DrillCluster {
 public:
  DrillCluster(std::string dir, std::string bin) : dir_(std::move(dir)), bin_(std::move(bin)) {}
  ~DrillCluster() {
    if (agent_ > 0) Terminate(agent_, "tessera-agent", 15000);
    if (controller_ > 0) Terminate(controller_, "tesserad", 10000);
  }

  Status Start(const RecoveryBenchFlags& f, RecoveryMode policy) {
    std::filesystem::create_directories(dir_);
    auto pid =
        SpawnDetached({bin_ + "/tesserad", "--state", dir_, "--port", "0", "--endpoint-file",
                       dir_ + "/endpoint", "--recovery", std::string(RecoveryModeName(policy)),
                       "--heartbeat-timeout", std::to_string(f.heartbeat_timeout_s)},
                      dir_ + "/tesserad.log");
    if (!pid) return std::unexpected(pid.error());
    controller_ = *pid;
    for (int i = 0; i < 3000 && url_.empty(); ++i) {
      std::ifstream in(dir_ + "/endpoint");
      std::getline(in, url_);
      if (!ProcessIs(controller_, "tesserad")) return Internal("tesserad exited; see its log");
      std::this_thread::sleep_for(milliseconds(5));
    }
    if (url_.empty()) return Internal("tesserad did not start");
    pid = SpawnDetached(
        {bin_ + "/tessera-agent", "--server", url_, "--node", "sim", "--state", dir_ + "/agent",
         "--simulate-nodes", std::to_string(f.nodes), "--simulate-gpus", f.gpus},
        dir_ + "/agent.log");
    if (!pid) return std::unexpected(pid.error());
    agent_ = *pid;
    return WaitReady(f.nodes);
  }
  const std::string& url() const { return url_; }

 private:
  Status WaitReady(int nodes) {
    ApiClient api(url_, 30);
    for (int i = 0; i < 1200; ++i) {
      int ready = 0;
      if (auto out = JsonOf(api.Get("/v1/nodes"))) {
        for (const auto& n : (*out)["nodes"]) ready += n.value("status", "") == "Ready";
      }
      if (ready == nodes) return {};
      std::this_thread::sleep_for(milliseconds(100));
    }
    return Internal("the emulated nodes did not all register; see " + dir_ + "/agent.log");
  }

  std::string dir_, bin_, url_;
  pid_t controller_ = 0, agent_ = 0;
};

std::string GangSpec(int workers) {
  return "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: drill}\nspec: {workers: " +
         std::to_string(workers) +
         ", gpusPerWorker: 8, maxRestarts: 1000, gracePeriodSeconds: 5, command: [sleep, "
         "'86400']}\n";
}

// Waits until the gang's attempt `after` or later has every rank running; returns the attempt.
Result<int> WaitAllRunning(ApiClient& api, int workers, int after, Tick deadline_ms) {
  while (WallMs() < deadline_ms) {
    auto out = JsonOf(api.Get("/v1/jobs?name=drill"));
    if (out && !(*out)["jobs"].empty()) {
      const Json& j = (*out)["jobs"][0];
      if (j["runningTasks"] == workers && j["attempt"].get<int>() > after)
        return j["attempt"].get<int>();
    }
    std::this_thread::sleep_for(milliseconds(5));
  }
  return Internal("the gang did not run again within the deadline");
}

struct Victim {
  std::string node;
  std::string agent_url;
};

// The node of the middle rank of the latest attempt.
Result<Victim> PickVictim(ApiClient& api, int workers) {
  auto job = JsonOf(api.Get("/v1/jobs/default/drill"));
  if (!job) return std::unexpected(job.error());
  for (const auto& t : (*job)["taskList"]) {
    if (t["attempt"] == (*job)["attempt"] && t["rank"] == workers / 2) {
      auto nodes = JsonOf(api.Get("/v1/nodes"));
      if (!nodes) return std::unexpected(nodes.error());
      for (const auto& n : (*nodes)["nodes"]) {
        if (n["name"] == t["node"]) return Victim{n["name"], n["agentUrl"]};
      }
    }
  }
  return Internal("no task of the middle rank");
}

// The timeMs of the first `type` event about `object` after `since`.
std::optional<Tick> EventTime(ApiClient& api, std::int64_t since, const std::string& type,
                              const std::string& object) {
  auto out = JsonOf(api.Get("/v1/events?since=" + std::to_string(since) + "&limit=10000"));
  if (!out) return std::nullopt;
  for (const auto& e : (*out)["events"]) {
    if (e["type"] == type && e["object"] == object) return e["timeMs"].get<Tick>();
  }
  return std::nullopt;
}

Result<Json> DrillOnce(ApiClient& api, const RecoveryBenchFlags& f, int attempt) {
  auto victim = PickVictim(api, f.workers);
  if (!victim) return std::unexpected(victim.error());
  auto status = JsonOf(api.Get("/v1/status"));
  if (!status) return std::unexpected(status.error());
  const std::int64_t seq = (*status).value("lastEventSeq", std::int64_t{0});
  httplib::Client agent(victim->agent_url);
  const Tick killed = WallMs();
  auto res = agent.Post(("/v1/emulated/" + victim->node + "/fail").c_str(), "", "text/plain");
  if (!res || res->status != 200) return Internal("the agent refused the failure drill");
  const Tick deadline = killed + static_cast<Tick>(f.heartbeat_timeout_s * 1000) + 120'000;
  auto next = WaitAllRunning(api, f.workers, attempt, deadline);
  if (!next) return std::unexpected(next.error());
  const Tick running = WallMs();
  const auto lost = EventTime(api, seq, "NodeLost", "node/" + victim->node);
  if (!lost) return Internal("no NodeLost event for " + victim->node);
  return Json{{"node", victim->node},
              {"attempt", *next},
              {"detectMs", *lost - killed},
              {"recoverMs", running - killed},
              {"afterDetectMs", running - *lost}};
}

Result<Json> MeasurePolicy(const RecoveryBenchFlags& f, RecoveryMode policy, const std::string& dir,
                           const std::string& bin) {
  DrillCluster cluster(dir, bin);
  if (auto s = cluster.Start(f, policy); !s) return std::unexpected(s.error());
  ApiClient api(cluster.url(), 30);
  if (auto r = JsonOf(api.Post("/v1/jobs", GangSpec(f.workers), "application/yaml")); !r)
    return std::unexpected(r.error());
  auto attempt = WaitAllRunning(api, f.workers, 0, WallMs() + 120'000);
  if (!attempt) return std::unexpected(attempt.error());
  Json rounds = Json::array();
  std::vector<double> detect, recover, after;
  for (int r = 0; r < f.rounds; ++r) {
    auto round = DrillOnce(api, f, *attempt);
    if (!round) return std::unexpected(round.error());
    *attempt = (*round)["attempt"].get<int>();
    detect.push_back((*round)["detectMs"].get<double>());
    recover.push_back((*round)["recoverMs"].get<double>());
    after.push_back((*round)["afterDetectMs"].get<double>());
    std::cerr << "bench recovery: " << RecoveryModeName(policy) << " round " << r + 1 << ": "
              << (*round).dump() << "\n";
    rounds.push_back(std::move(*round));
  }
  return Json{{"policy", std::string(RecoveryModeName(policy))},
              {"detectMsMean", Mean(detect)},
              {"recoverMsMean", Mean(recover)},
              {"afterDetectMsMean", Mean(after)},
              {"rounds", rounds}};
}

// The constants `tessera sim --experiment failures --recovery-times measured` reads.
std::string PresetHeader(const Json& out) {
  std::map<std::string, double> after;
  double detect = 0;
  for (const auto& p : out["policies"]) {
    after[p["policy"]] = p["afterDetectMsMean"].get<double>() / 1000.0;
    detect = std::max(detect, p["detectMsMean"].get<double>() / 1000.0);
  }
  const double warm = after.contains("spares") ? after["spares"] : after["replace"];
  const double cold = std::max(0.0, after["replace"] - warm);
  const int workers = out["workers"].get<int>();
  const double per_node =
      workers > 1 ? std::max(0.0, after["requeue"] - after["replace"]) / (workers - 1) : 0.0;
  std::ostringstream h;
  h << "// Written by `tessera bench recovery --write-preset` ("
    << out["conditions"].get<std::string>()
    << "). The live controller's\n// recovery times on this machine, for `tessera sim --experiment "
       "failures --recovery-times\n// measured` (docs/failures.md): detection is the heartbeat "
       "timeout plus the liveness check;\n// restart is what spares take after detection (warm "
       "nodes); cold start is what replace takes\n// beyond that; the per-node cold start is "
       "requeue beyond replace, per rank moved.\n#pragma once\n\nnamespace tessera::measured {\n\n"
    << "inline constexpr double kDetectSeconds = " << detect << ";\n"
    << "inline constexpr double kRestartSeconds = " << warm << ";\n"
    << "inline constexpr double kColdStartSeconds = " << cold << ";\n"
    << "inline constexpr double kColdStartPerNodeSeconds = " << per_node << ";\n"
    << "inline constexpr const char* kSource = \"" << out["conditions"].get<std::string>()
    << "\";\n\n}  // namespace tessera::measured\n";
  return h.str();
}

Status RunRecoveryBench(const RecoveryBenchFlags& f) {
  auto format = ParseOutput(f.output);
  if (!format) return std::unexpected(format.error());
  if (f.nodes < 2 || f.workers < 2 || f.workers >= f.nodes) {
    return InvalidArgument("--workers: must be 2..nodes-1 (" + std::to_string(f.nodes) +
                           " nodes), got " + std::to_string(f.workers));
  }
  std::vector<RecoveryMode> policies;
  for (const auto& name : SplitCommas(f.policies)) {
    auto p = ParseRecoveryMode(name);
    if (!p) {
      return InvalidArgument("--policies: '" + name + "' is not one of " +
                             std::string(kRecoveryModeNames));
    }
    policies.push_back(*p);
  }
  std::string dir = f.state;
  const bool temp = dir.empty();
  if (temp) {
    char tmpl[] = "/tmp/tessera-bench-recovery-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return IoError("mkdtemp failed");
    dir = tmpl;
  }
  const std::string bin = f.bin_dir.empty() ? SelfDirectory() : f.bin_dir;
  Json out;
  out["conditions"] = std::to_string(f.nodes) + " emulated nodes of simulated " + f.gpus +
                      ", gang of " + std::to_string(f.workers) +
                      " sleep workers, heartbeat timeout " + Number(f.heartbeat_timeout_s) +
                      " s, " + std::to_string(std::thread::hardware_concurrency()) + " CPUs, " +
                      std::to_string(f.rounds) + " round(s) per policy";
  out["workers"] = f.workers;
  out["policies"] = Json::array();
  for (RecoveryMode p : policies) {
    auto m = MeasurePolicy(f, p, dir + "/" + std::string(RecoveryModeName(p)), bin);
    if (!m) return std::unexpected(m.error());
    out["policies"].push_back(std::move(*m));
  }
  if (temp) std::filesystem::remove_all(dir);
  if (!f.out_path.empty() && !WriteText(f.out_path, out.dump(2) + "\n"))
    return IoError("cannot write " + f.out_path);
  if (!f.preset_path.empty() && !WriteText(f.preset_path, PresetHeader(out)))
    return IoError("cannot write " + f.preset_path);
  if (*format != OutputFormat::kTable) {
    PrintStructured(out, *format);
    return {};
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : out["policies"]) {
    rows.push_back({p["policy"], Number(p["detectMsMean"].get<double>()) + " ms",
                    Number(p["recoverMsMean"].get<double>()) + " ms",
                    Number(p["afterDetectMsMean"].get<double>()) + " ms"});
  }
  PrintTable({"POLICY", "DETECT", "NODE LOSS -> ALL RUNNING", "AFTER DETECTION"}, rows);
  std::cout << out["conditions"].get<std::string>() << "\n";
  return {};
}

}  // namespace

void RegisterBenchRecoveryCommand(CLI::App& app) {
  CLI::App* bench = nullptr;
  for (auto* sub : app.get_subcommands([](CLI::App* s) { return s->get_name() == "bench"; }))
    bench = sub;
  if (bench == nullptr) return;  // registered after `bench live`, which creates it
  auto flags = std::make_shared<RecoveryBenchFlags>();
  auto* cmd = bench->add_subcommand(
      "recovery", "Measure live failure detection and recovery time per recovery policy");
  cmd->add_option("--nodes", flags->nodes, "Emulated nodes (one agent)")->capture_default_str();
  cmd->add_option("--gpus", flags->gpus, "Simulated GPUs per node")->capture_default_str();
  cmd->add_option("--workers", flags->workers, "Gang size (one 8-GPU worker per node)")
      ->capture_default_str();
  cmd->add_option("--policies", flags->policies, "Recovery policies to measure")
      ->capture_default_str();
  cmd->add_option("--rounds", flags->rounds, "Node failures per policy")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd->add_option("--heartbeat-timeout", flags->heartbeat_timeout_s,
                  "tesserad --heartbeat-timeout (seconds)")
      ->capture_default_str()
      ->check(CLI::Range(0.2, 600.0));
  cmd->add_option("--state", flags->state, "Working directory (default: a temporary one)");
  cmd->add_option("--bin-dir", flags->bin_dir, "Where tesserad and tessera-agent are");
  cmd->add_option("--out", flags->out_path, "Write the JSON result here");
  cmd->add_option("--write-preset", flags->preset_path,
                  "Write the means as the sim's measured preset (a C++ header)");
  AddOutputFlag(cmd, &flags->output);
  cmd->callback([flags] { SetExitCode(RunOrReport([&] { return RunRecoveryBench(*flags); })); });
}

}  // namespace tessera::cli
