// `tessera bench live`: the live cluster's speed on this machine, with simulated GPUs.
//  1. submit-to-start latency: jobs submitted one at a time to an idle all-in-one cluster;
//     from the controller's acknowledgement to the agent's start of the process (median, p99);
//  2. durable submissions acknowledged per second: a burst from several clients into a full
//     cluster (every job is committed to SQLite with fsync before its 201);
//  3. restart to first scheduling decision with 10,000 jobs in the store: a store written with
//     the controller's own schema and canonical specs (9,000 finished jobs with their tasks,
//     1,000 pending), then tesserad started on it.
// With --nodes N: the controller at scale instead (bench_live_scale.h).
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>

#include "cli/bench_group.h"
#include "cli/bench_live_scale.h"
#include "cli/commands.h"
#include "cli/daemon.h"
#include "cli/live_client.h"
#include "cli/live_commands.h"
#include "core/percentile.h"
#include "spec/document.h"
#include "spec/job_spec.h"
#include "store/sqlite_store.h"

namespace tessera::cli {

namespace {

using Json = nlohmann::json;

struct BenchFlags {
  std::string state;
  int submissions = 2000;
  int clients = 8;
  int latency_jobs = 200;
  int restart_jobs = 10000;
  int agents = 2;
  std::string gpus = "4xH100";
  std::string bin_dir;
  std::string output;
  // --nodes > 0: the controller at scale instead (bench_live_scale.h).
  LiveScaleOptions scale;
  std::string out_file;
};

class BenchCluster {
 public:
  BenchCluster(std::string dir, std::string bin) : dir_(std::move(dir)), bin_(std::move(bin)) {}
  ~BenchCluster() { StopAll(); }

  Status StartController() {
    std::filesystem::remove(dir_ + "/endpoint");
    auto pid = SpawnDetached({bin_ + "/tesserad", "--state", dir_, "--port", "0", "--endpoint-file",
                              dir_ + "/endpoint", "--insecure"},
                             dir_ + "/tesserad.log");
    if (!pid) return std::unexpected(pid.error());
    controller_ = *pid;
    spawned_ = std::chrono::steady_clock::now();
    for (int i = 0; i < 3000; ++i) {
      std::ifstream in(dir_ + "/endpoint");
      std::getline(in, url_);
      if (!url_.empty()) return {};
      if (!ProcessIs(controller_, "tesserad"))
        return Internal("tesserad exited; see " + dir_ + "/tesserad.log");
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return Internal("tesserad did not start");
  }
  Status StartAgents(int n, const std::string& gpus) {
    for (int i = 0; i < n; ++i) {
      const std::string node = "node-" + std::to_string(i);
      auto pid = SpawnDetached({bin_ + "/tessera-agent", "--server", url_, "--node", node,
                                "--state", dir_ + "/agents/" + node, "--simulate-gpus", gpus},
                               dir_ + "/agent-" + node + ".log");
      if (!pid) return std::unexpected(pid.error());
      agents_.push_back(*pid);
    }
    ApiClient api(url_, 5);
    for (int i = 0; i < 600; ++i) {
      int ready = 0;
      if (auto nodes = JsonOf(api.Get("/v1/nodes"))) {
        for (const auto& node : (*nodes)["nodes"]) ready += node.value("status", "") == "Ready";
      }
      if (ready == n) return {};
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return Internal("agents did not register");
  }
  void StopAll() {
    for (pid_t a : agents_) Terminate(a, "tessera-agent", 15000);
    agents_.clear();
    if (controller_ > 0) Terminate(controller_, "tesserad", 10000);
    controller_ = 0;
  }
  const std::string& url() const { return url_; }
  std::chrono::steady_clock::time_point spawned() const { return spawned_; }

 private:
  std::string dir_, bin_, url_;
  pid_t controller_ = 0;
  std::vector<pid_t> agents_;
  std::chrono::steady_clock::time_point spawned_;
};

std::string BatchSpec(const std::string& name, const std::string& queue,
                      const std::string& command) {
  return "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: " + name + ", queue: " + queue +
         "}\nspec: {tasks: 1, gpusPerTask: 1, maxRestarts: 0, command: " + command + "}\n";
}

Result<Json> MeasureLatency(const std::string& url, int jobs) {
  ApiClient api(url, 10);
  std::vector<double> latencies;
  for (int i = 0; i < jobs; ++i) {
    const std::string name = "lat-" + std::to_string(i);
    auto latency =
        SubmitAndTimeMs(api, "bench-latency", name,
                        BatchSpec(name, "bench-latency", "[sleep, \"0.05\"]"), "startedMs", 1);
    if (!latency) return std::unexpected(latency.error());
    latencies.push_back(*latency);
  }
  return Json{{"jobs", jobs},
              {"medianMs", Percentile(latencies, 50)},
              {"p99Ms", Percentile(latencies, 99)},
              {"maxMs", Percentile(latencies, 100)}};
}

Result<Json> MeasureSubmissions(const std::string& url, int submissions, int clients) {
  ApiClient api(url, 10);
  // Fill every GPU first, so that the burst queues up as a real backlog would.
  auto filler = JsonOf(api.Post("/v1/jobs",
                                "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: "
                                "{name: filler, queue: bench-burst}\nspec: {workers: 2, "
                                "gpusPerWorker: 4, command: [sleep, \"3600\"]}\n"));
  if (!filler) return std::unexpected(filler.error());
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  std::atomic<int> next{0}, failures{0};
  std::mutex mu;
  std::vector<double> request_ms;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&] {
      httplib::Client http(url);
      http.set_tcp_nodelay(true);
      http.set_keep_alive(true);
      http.set_read_timeout(30, 0);
      std::vector<double> mine;
      for (int i = next++; i < submissions; i = next++) {
        const auto s = std::chrono::steady_clock::now();
        auto r = http.Post(
            "/v1/jobs", BatchSpec("burst-" + std::to_string(i), "bench-burst", "[sleep, \"3600\"]"),
            "application/yaml");
        if (!r || r->status != 201) {
          ++failures;
          continue;
        }
        mine.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s)
                .count());
      }
      std::lock_guard lock(mu);
      request_ms.insert(request_ms.end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : threads) t.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (failures > 0) return Internal(std::to_string(failures.load()) + " submissions failed");
  return Json{{"submissions", submissions},
              {"clients", clients},
              {"seconds", seconds},
              {"perSecond", submissions / seconds},
              {"requestMedianMs", Percentile(request_ms, 50)},
              {"requestP99Ms", Percentile(request_ms, 99)}};
}

// Writes `jobs` jobs into a fresh store: 90% finished (two tasks each), 10% pending.
Status WriteStore(const std::string& path, int jobs) {
  auto store = SqliteStore::Open(path);
  if (!store) return std::unexpected(store.error());
  auto spec = ParseJobSpec(BatchSpec("template", "bench-restart", "[sleep, \"60\"]"));
  if (!spec) return std::unexpected(spec.error());
  auto finished_spec = ParseJobSpec(
      "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: template, queue: "
      "bench-restart}\n"
      "spec: {workers: 2, gpusPerWorker: 4, command: [torchrun, --nproc-per-node=4, train.py]}\n");
  if (!finished_spec) return std::unexpected(finished_spec.error());
  const Tick now = NowMs();
  Change c;
  c.put_queues.push_back({"bench-restart", now});
  std::int64_t task_id = 1;
  for (int i = 0; i < jobs; ++i) {
    const bool finished = i < jobs * 9 / 10;
    JobSpec s = finished ? *finished_spec : *spec;
    s.name = "job-" + std::to_string(i);
    JobRecord j;
    j.id = i + 1;
    j.queue = s.queue;
    j.name = s.name;
    j.kind = std::string(KindName(s.kind));
    j.spec_json = DumpJson(JobSpecToJson(s));
    j.submit_ms = now - (jobs - i) * 1000;
    UnitRecord u;
    u.job_id = j.id;
    u.pending_since_ms = j.submit_ms;
    if (finished) {
      j.finished_ms = j.submit_ms + 500;
      u.phase = UnitPhase::kSucceeded;
      u.attempt = 1;
      u.started_ms = u.first_started_ms = j.submit_ms + 10;
      u.finished_ms = j.finished_ms;
      for (int rank = 0; rank < 2; ++rank) {
        TaskRecord t;
        t.id = task_id++;
        t.job_id = j.id;
        t.attempt = 1;
        t.rank = rank;
        t.node = "node-" + std::to_string(rank);
        t.gpus = {0, 1, 2, 3};
        t.state = TaskState::kSucceeded;
        t.created_ms = t.started_ms = u.started_ms;
        t.finished_ms = j.finished_ms;
        t.master_addr = "127.0.0.1";
        t.master_port = 29500;
        c.put_tasks.push_back(std::move(t));
      }
    }
    c.put_jobs.push_back(std::move(j));
    c.put_units.push_back(u);
  }
  for (int n = 0; n < 2; ++n) {
    NodeRecord node;
    node.name = "node-" + std::to_string(n);
    node.address = "127.0.0.1";
    node.gpu_model = "H100";
    node.gpu_count = 4;
    node.simulated = true;
    node.cpu_milli = 2000;
    node.memory_mib = 8192;
    node.gpus_json = "[]";
    node.status = NodeStatus::kReady;
    node.registered_ms = now;
    c.put_nodes.push_back(node);
  }
  auto r = (*store)->Commit(c);
  if (!r) return std::unexpected(r.error());
  return {};
}

Result<Json> MeasureRestart(const std::string& dir, const std::string& bin, int jobs) {
  std::filesystem::create_directories(dir);
  if (auto s = WriteStore(dir + "/tesserad.db", jobs); !s) return std::unexpected(s.error());
  BenchCluster cluster(dir, bin);
  if (auto s = cluster.StartController(); !s) return std::unexpected(s.error());
  ApiClient api(cluster.url(), 10);
  for (int i = 0; i < 60000; ++i) {
    auto status = JsonOf(api.Get("/v1/status"));
    if (status && (*status)["firstDecisionMs"].get<std::int64_t>() >= 0) {
      const double external = std::chrono::duration<double, std::milli>(
                                  std::chrono::steady_clock::now() - cluster.spawned())
                                  .count();
      return Json{{"jobsInStore", (*status)["loadedJobs"]},
                  {"loadMs", (*status)["loadMs"]},
                  {"firstDecisionMs", (*status)["firstDecisionMs"]},
                  {"execToFirstDecisionSeenMs", external}};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return Internal("no scheduling decision within a minute");
}

Status RunBenchAtScale(const BenchFlags& f, OutputFormat format, const std::string& dir) {
  LiveScaleOptions o = f.scale;
  o.dir = dir + "/scale";
  o.bin = f.bin_dir.empty() ? SelfDirectory() : f.bin_dir;
  auto r = RunLiveScale(o);
  if (!r) return std::unexpected(r.error());
  if (!f.out_file.empty()) {
    std::ofstream out(f.out_file, std::ios::binary);
    out << r->dump(2) << "\n";
    if (!out) return IoError("--out: cannot write " + f.out_file);
    std::cerr << "wrote " << f.out_file << "\n";
  }
  if (format == OutputFormat::kTable) {
    PrintLiveScale(*r);
  } else {
    PrintStructured(*r, format);
  }
  return {};
}

Status RunBench(const BenchFlags& f) {
  auto format = ParseOutput(f.output);
  if (!format) return std::unexpected(format.error());
  std::string dir = f.state;
  std::optional<std::string> temp;
  if (dir.empty()) {
    char tmpl[] = "/tmp/tessera-bench-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return IoError("mkdtemp failed");
    dir = tmpl;
    temp = dir;
  }
  if (f.scale.nodes > 0) {
    Status s = RunBenchAtScale(f, *format, dir);
    if (temp) std::filesystem::remove_all(*temp);
    return s;
  }
  const std::string bin = f.bin_dir.empty() ? SelfDirectory() : f.bin_dir;
  Json out;
  out["machine"] = {{"cpus", std::thread::hardware_concurrency()},
                    {"gpus", "simulated " + f.gpus + " x " + std::to_string(f.agents)}};
  {
    std::filesystem::create_directories(dir + "/live/agents");
    BenchCluster cluster(dir + "/live", bin);
    if (auto s = cluster.StartController(); !s) return s;
    if (auto s = cluster.StartAgents(f.agents, f.gpus); !s) return s;
    if (f.latency_jobs > 0) {
      std::cerr << "bench: submit-to-start latency, " << f.latency_jobs << " jobs one at a time\n";
      auto lat = MeasureLatency(cluster.url(), f.latency_jobs);
      if (!lat) return std::unexpected(lat.error());
      out["submitToStart"] = *lat;
    }
    if (f.submissions > 0) {
      std::cerr << "bench: " << f.submissions << " durable submissions from " << f.clients
                << " clients\n";
      auto sub = MeasureSubmissions(cluster.url(), f.submissions, f.clients);
      if (!sub) return std::unexpected(sub.error());
      out["submissions"] = *sub;
    }
  }
  if (f.restart_jobs > 0) {
    std::cerr << "bench: restart with " << f.restart_jobs << " jobs in the store\n";
    auto restart = MeasureRestart(dir + "/restart", bin, f.restart_jobs);
    if (!restart) return std::unexpected(restart.error());
    out["restart"] = *restart;
  }
  if (temp) std::filesystem::remove_all(*temp);
  if (*format != OutputFormat::kTable) {
    PrintStructured(out, *format);
    return {};
  }
  std::vector<std::vector<std::string>> rows;
  if (out.contains("submissions")) {
    rows.push_back({"durable submissions acknowledged",
                    Number(out["submissions"]["perSecond"].get<double>()) + " /s",
                    std::to_string(f.submissions) + " jobs, " + std::to_string(f.clients) +
                        " clients; request p50 " +
                        Number(out["submissions"]["requestMedianMs"].get<double>()) + " ms, p99 " +
                        Number(out["submissions"]["requestP99Ms"].get<double>()) + " ms"});
  }
  if (out.contains("submitToStart")) {
    rows.push_back({"submit-to-start latency, median",
                    Number(out["submitToStart"]["medianMs"].get<double>()) + " ms",
                    std::to_string(f.latency_jobs) + " jobs, idle cluster"});
    rows.push_back({"submit-to-start latency, p99",
                    Number(out["submitToStart"]["p99Ms"].get<double>()) + " ms", ""});
  }
  if (out.contains("restart")) {
    rows.push_back({"restart to first scheduling decision",
                    std::to_string(out["restart"]["firstDecisionMs"].get<std::int64_t>()) + " ms",
                    std::to_string(f.restart_jobs) + " jobs in the store; load " +
                        std::to_string(out["restart"]["loadMs"].get<std::int64_t>()) +
                        " ms; exec to seen " +
                        Number(out["restart"]["execToFirstDecisionSeenMs"].get<double>()) + " ms"});
  }
  PrintTable({"MEASURE", "RESULT", "CONDITIONS"}, rows);
  return {};
}

}  // namespace

void RegisterBenchLiveCommand(CLI::App& app) {
  CLI::App* bench = &BenchGroup(app);
  auto flags = std::make_shared<BenchFlags>();
  auto* cmd = bench->add_subcommand(
      "live", "Measure the live cluster: submissions/s, submit-to-start latency, restart time");
  cmd->add_option("--state", flags->state,
                  "Working directory (default: a temporary one, removed after)");
  cmd->add_option("--submissions", flags->submissions, "Jobs in the submission burst")
      ->capture_default_str();
  cmd->add_option("--clients", flags->clients, "Concurrent submitting clients")
      ->capture_default_str();
  cmd->add_option("--latency-jobs", flags->latency_jobs, "Jobs for the latency measure")
      ->capture_default_str();
  cmd->add_option("--restart-jobs", flags->restart_jobs,
                  "Jobs in the store for the restart measure")
      ->capture_default_str();
  cmd->add_option("--agents", flags->agents, "Agents of the all-in-one cluster")
      ->capture_default_str();
  cmd->add_option("--gpus", flags->gpus, "Simulated GPUs per agent")->capture_default_str();
  cmd->add_option("--bin-dir", flags->bin_dir, "Where tesserad and tessera-agent are");
  cmd->add_option("--nodes", flags->scale.nodes,
                  "At scale instead: this many emulated nodes in one agent running simulated "
                  "tasks, --pending jobs in the store; cycle, submit-to-bind, job listing, RSS");
  cmd->add_option("--gpus-per-node", flags->scale.gpus_per_node,
                  "At scale: simulated GPUs per emulated node")
      ->capture_default_str();
  cmd->add_option("--pending", flags->scale.pending,
                  "At scale: single-GPU jobs of priority 0 in the store before the start")
      ->capture_default_str();
  cmd->add_option("--seconds", flags->scale.seconds, "At scale: the measurement window")
      ->capture_default_str();
  cmd->add_option("--probes", flags->scale.probes,
                  "At scale: at most this many priority-100 probe jobs, one at a time")
      ->capture_default_str();
  cmd->add_option("--out", flags->out_file, "At scale: write the JSON here too");
  AddOutputFlag(cmd, &flags->output);
  cmd->callback([flags] { SetExitCode(RunOrReport([&] { return RunBench(*flags); })); });
}

}  // namespace tessera::cli
