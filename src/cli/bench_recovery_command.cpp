// `tessera bench recovery`: how long this controller takes to notice a dead node and to have
// every rank of the gang it hit running again, per recovery policy, on an all-in-one loopback
// cluster of emulated nodes (one tessera-agent --simulate-nodes N) running `sleep` (--program
// sleep, at 1,000 nodes) or the PyTorch example (--program pytorch: examples/programs/
// ddp_train.py, real DDP on CPU with gloo, checkpointing every 10 steps). For each policy a fresh
// cluster (tesserad --recovery POLICY) runs one gang; each round kills the node of one of its
// ranks through the agent's failure drill (POST /v1/emulated/NODE/fail: its processes die and
// its heartbeats stop, as a machine that died) and times
//   detect:   the kill -> the controller's NodeLost event (heartbeat timeout + liveness check);
//   recover:  the kill -> every rank of the new attempt reported running by the agent;
//   resumed:  (pytorch) the kill -> rank 0 of the new attempt logged its first training step
//             (steps are all-reduced, so every rank trains again), from the checkpoint it loaded.
// `--write-preset FILE` merges the result into the JSON `tessera sim --experiment failures
// --recovery-times measured|FILE` reads (src/sim/failures/measured_recovery_times.h).
#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include "cli/bench_group.h"
#include "cli/commands.h"
#include "cli/daemon.h"
#include "cli/live_client.h"
#include "cli/live_commands.h"
#include "core/recovery_mode.h"
#include "core/time.h"
#include "sim/failures/measured_recovery_times.h"

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
  std::string program = "sleep";  // sleep | pytorch
  std::string script = "examples/programs/ddp_train.py";
  std::string python = "/usr/bin/python3";
  std::string dir;  // the working directory of this run (for the checkpoints)
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
    auto pid = SpawnDetached(
        {bin_ + "/tesserad", "--state", dir_, "--port", "0", "--insecure", "--endpoint-file",
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

bool IsPytorch(const RecoveryBenchFlags& f) { return f.program == "pytorch"; }

// One 8-GPU worker per node: `sleep`, or the PyTorch example checkpointing every 10 steps of
// 0.2 s into this policy's directory (SIGKILLed ranks save nothing: it resumes from the last).
std::string GangSpec(const RecoveryBenchFlags& f, const std::string& dir) {
  std::string spec =
      "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: drill}\nspec:\n"
      "  workers: " +
      std::to_string(f.workers) +
      "\n  gpusPerWorker: 8\n  maxRestarts: 1000\n  gracePeriodSeconds: 5\n";
  if (!IsPytorch(f)) return spec + "  command: [sleep, '86400']\n";
  const std::string script = std::filesystem::absolute(f.script).string();
  return spec + "  checkpoint: {intervalSeconds: 3600, dir: '" + dir + "/ckpt'}\n" +
         "  workingDir: '" + std::filesystem::current_path().string() + "'\n  command: ['" +
         f.python + "', '" + script +
         "', --steps, '100000000', --checkpoint-every, '10', --min-step-seconds, '0.2']\n";
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

// Rank 0's log of `attempt` (empty while it has none).
std::string RankZeroLog(ApiClient& api, int attempt) {
  auto res = api.Get("/v1/logs/default/drill?rank=0&attempt=" + std::to_string(attempt));
  return res && res->status == 200 ? res->body : std::string();
}

// The last training step rank 0 of `attempt` logged, or -1.
int LastStep(const std::string& log) {
  static const std::regex re(R"(\] step (\d+) loss )");
  int last = -1;
  for (std::sregex_iterator it(log.begin(), log.end(), re), end; it != end; ++it)
    last = std::stoi((*it)[1]);
  return last;
}

// Waits until rank 0 of `attempt` has logged a training step: every rank trains (each step is
// all-reduced). Returns that log.
Result<std::string> WaitTraining(ApiClient& api, int attempt, Tick deadline_ms) {
  while (WallMs() < deadline_ms) {
    std::string log = RankZeroLog(api, attempt);
    if (LastStep(log) >= 0) return log;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return Internal("rank 0 of attempt " + std::to_string(attempt) + " logged no training step");
}

// PyTorch: from the kill until the new attempt trains again, and from which step.
Status TimeResumed(ApiClient& api, int attempt, int step_before, Tick killed, Tick lost,
                   Json& round) {
  auto log = WaitTraining(api, attempt, killed + 300'000);
  if (!log) return std::unexpected(log.error());
  const Tick resumed = WallMs();
  static const std::regex from(R"(resumed from step (\d+))");
  std::smatch m;
  const int start = std::regex_search(*log, m, from) ? std::stoi(m[1]) : 0;
  round["resumedMs"] = resumed - killed;
  round["afterDetectResumedMs"] = resumed - lost;
  round["lastStepBeforeKill"] = step_before;
  round["resumedFromStep"] = start;
  round["stepsRedone"] = step_before - start;
  return {};
}

Result<Json> DrillOnce(ApiClient& api, const RecoveryBenchFlags& f, int attempt) {
  int step_before = -1;
  if (IsPytorch(f)) {
    // Kill mid-training, past a checkpoint (every 10 steps) of this attempt.
    auto log = WaitTraining(api, attempt, WallMs() + 300'000);
    if (!log) return std::unexpected(log.error());
    const int first = LastStep(*log);
    while (LastStep(*log) < first + 15) {
      std::this_thread::sleep_for(milliseconds(100));
      *log = RankZeroLog(api, attempt);
    }
    step_before = LastStep(*log);
  }
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
  Json round{{"node", victim->node},
             {"attempt", *next},
             {"detectMs", *lost - killed},
             {"recoverMs", running - killed},
             {"afterDetectMs", running - *lost}};
  if (IsPytorch(f)) {
    if (auto s = TimeResumed(api, *next, step_before, killed, *lost, round); !s)
      return std::unexpected(s.error());
  }
  return round;
}

Result<Json> MeasurePolicy(const RecoveryBenchFlags& f, RecoveryMode policy, const std::string& dir,
                           const std::string& bin) {
  DrillCluster cluster(dir, bin);
  if (auto s = cluster.Start(f, policy); !s) return std::unexpected(s.error());
  ApiClient api(cluster.url(), 30);
  if (auto r = JsonOf(api.Post("/v1/jobs", GangSpec(f, dir), "application/yaml")); !r)
    return std::unexpected(r.error());
  auto attempt = WaitAllRunning(api, f.workers, 0, WallMs() + 120'000);
  if (!attempt) return std::unexpected(attempt.error());
  Json rounds = Json::array();
  std::vector<double> detect, recover, after, resumed, after_resumed;
  for (int r = 0; r < f.rounds; ++r) {
    auto round = DrillOnce(api, f, *attempt);
    if (!round) return std::unexpected(round.error());
    *attempt = (*round)["attempt"].get<int>();
    detect.push_back((*round)["detectMs"].get<double>());
    recover.push_back((*round)["recoverMs"].get<double>());
    after.push_back((*round)["afterDetectMs"].get<double>());
    if (IsPytorch(f)) {
      resumed.push_back((*round)["resumedMs"].get<double>());
      after_resumed.push_back((*round)["afterDetectResumedMs"].get<double>());
    }
    std::cerr << "bench recovery: " << RecoveryModeName(policy) << " round " << r + 1 << ": "
              << (*round).dump() << "\n";
    rounds.push_back(std::move(*round));
  }
  Json out{{"policy", std::string(RecoveryModeName(policy))},
           {"detectMsMean", Mean(detect)},
           {"recoverMsMean", Mean(recover)},
           {"afterDetectMsMean", Mean(after)},
           {"rounds", rounds}};
  if (IsPytorch(f)) {
    out["resumedMsMean"] = Mean(resumed);
    out["afterDetectResumedMsMean"] = Mean(after_resumed);
  }
  return out;
}

Status RunRecoveryBench(const RecoveryBenchFlags& f) {
  auto format = ParseOutput(f.output);
  if (!format) return std::unexpected(format.error());
  if (f.nodes < 2 || f.workers < 2 || f.workers >= f.nodes) {
    return InvalidArgument("--workers: must be 2..nodes-1 (" + std::to_string(f.nodes) +
                           " nodes), got " + std::to_string(f.workers));
  }
  // Each round's node stays dead; the last round still needs the gang and a spare.
  if (f.nodes < f.workers + f.rounds + 1) {
    return InvalidArgument("--nodes: at least workers + rounds + 1 (" +
                           std::to_string(f.workers + f.rounds + 1) +
                           "): every round's node stays dead, got " + std::to_string(f.nodes));
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
  if (f.program != "sleep" && f.program != "pytorch")
    return InvalidArgument("--program: must be sleep or pytorch, got '" + f.program + "'");
  if (IsPytorch(f) && !std::filesystem::exists(f.script)) {
    return InvalidArgument("--script: " + f.script +
                           " not found (run from the repository root, or give its path)");
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
                      (IsPytorch(f) ? " PyTorch DDP workers (examples/programs/ddp_train.py, "
                                      "CPU, gloo, checkpoint every 10 steps of 0.2 s)"
                                    : " sleep workers") +
                      ", heartbeat timeout " + Number(f.heartbeat_timeout_s) + " s, " +
                      std::to_string(std::thread::hardware_concurrency()) + " CPUs, " +
                      std::to_string(f.rounds) + " round(s) per policy";
  out["program"] = f.program;
  out["workers"] = f.workers;
  out["nodes"] = f.nodes;
  out["heartbeat_timeout_seconds"] = f.heartbeat_timeout_s;
  out["policies"] = Json::array();
  for (RecoveryMode p : policies) {
    auto m = MeasurePolicy(f, p, dir + "/" + std::string(RecoveryModeName(p)), bin);
    if (!m) {
      // The logs of the failed run are what explains it: kept, and named.
      return std::unexpected(Error{m.error().code, m.error().message + " (logs in " + dir + "/" +
                                                       std::string(RecoveryModeName(p)) + ")"});
    }
    out["policies"].push_back(std::move(*m));
  }
  if (temp) std::filesystem::remove_all(dir);
  if (!f.out_path.empty() && !WriteText(f.out_path, out.dump(2) + "\n"))
    return IoError("cannot write " + f.out_path);
  if (!f.preset_path.empty()) {
    Json existing;
    if (std::ifstream in(f.preset_path); in) {
      std::stringstream text;
      text << in.rdbuf();
      existing = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
      if (existing.is_discarded())
        return InvalidArgument("--write-preset: " + f.preset_path + " is not JSON");
    }
    if (!WriteText(f.preset_path, MergeMeasuredRecoveryRun(existing, out).dump(2) + "\n"))
      return IoError("cannot write " + f.preset_path);
  }
  if (*format != OutputFormat::kTable) {
    PrintStructured(out, *format);
    return {};
  }
  std::vector<std::vector<std::string>> rows;
  auto ms = [](const Json& p, const char* key) {
    return p.contains(key) ? Number(p[key].get<double>()) + " ms" : std::string("-");
  };
  for (const auto& p : out["policies"]) {
    rows.push_back({p["policy"], ms(p, "detectMsMean"), ms(p, "recoverMsMean"),
                    ms(p, "afterDetectMsMean"), ms(p, "resumedMsMean")});
  }
  PrintTable(
      {"POLICY", "DETECT", "NODE LOSS -> ALL RUNNING", "AFTER DETECTION", "NODE LOSS -> TRAINING"},
      rows);
  std::cout << out["conditions"].get<std::string>() << "\n";
  return {};
}

}  // namespace

void RegisterBenchRecoveryCommand(CLI::App& app) {
  CLI::App* bench = &BenchGroup(app);
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
                  "Merge the result into this JSON file, the sim's --recovery-times preset "
                  "(src/sim/failures/measured_recovery_times.json is the built-in one)");
  cmd->add_option("--program", flags->program,
                  "sleep | pytorch (examples/programs/ddp_train.py; e.g. --nodes 8 --workers 2)")
      ->capture_default_str();
  cmd->add_option("--script", flags->script, "With --program pytorch: the training script")
      ->capture_default_str();
  cmd->add_option("--python", flags->python, "With --program pytorch: the interpreter")
      ->capture_default_str();
  AddOutputFlag(cmd, &flags->output);
  cmd->callback([flags] { SetExitCode(RunOrReport([&] { return RunRecoveryBench(*flags); })); });
}

}  // namespace tessera::cli
