// `tessera bench metrics`: what /metrics costs the controller, in process on this machine.
// A store is written with the controller's own schema: N simulated nodes of 8 GPUs (1,250 by
// default), one running 8-GPU job per node (the cluster is full), P pending 8-GPU jobs that
// wait for it (10,000), and finished jobs up to J in all (100,000). A Controller is loaded from
// it (no threads, no agents), and then:
//  1. the scheduling cycle, repeated, with metrics off and on in alternating blocks, while a
//     scraper reads /metrics every second as Prometheus would (on) or nothing reads it (off):
//     the median and mean cycle of each and their ratios. A block lasts --cycles cycles and at
//     least --block-seconds, so that the scrapes fall on the cycles at their real rate (one a
//     second) rather than on the first of a handful;
//  2. one scrape's time, and how long its gathering held the controller's lock, with every
//     scrape gathering afresh.
// The cycle does the same work every time (nothing fits, nothing changes), so the two modes
// compare like with like. Prints a table, or -o json.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <thread>

#include "cli/bench_group.h"
#include "cli/commands.h"
#include "cli/live_client.h"
#include "cli/live_commands.h"
#include "server/controller.h"
#include "spec/document.h"
#include "spec/job_spec.h"
#include "store/sqlite_store.h"

namespace tessera::cli {

namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

struct MetricsBenchFlags {
  int nodes = 1250;
  int pending = 10000;
  int jobs = 100000;
  int cycles = 10;  // per mode and block, at least
  double block_seconds = 3;
  int blocks = 3;
  std::string output;
};

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

NodeRecord BenchNode(int i, Tick now) {
  NodeRecord n;
  char name[32];
  std::snprintf(name, sizeof name, "node-%05d", i);
  n.name = name;
  n.address = "127.0.0.1";
  n.gpu_model = "H100";
  n.gpu_count = 8;
  n.simulated = true;
  n.cpu_milli = 192000;
  n.memory_mib = 2048 * 1024;
  n.gpus_json = "[]";
  n.status = NodeStatus::kReady;
  n.registered_ms = now;
  return n;
}

// The store of the benchmark (see the file comment).
Status WriteBenchStore(const std::string& path, const MetricsBenchFlags& f) {
  auto store = SqliteStore::Open(path);
  if (!store) return std::unexpected(store.error());
  auto spec = ParseJobSpec(
      "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: template, queue: bench}\n"
      "spec: {workers: 1, gpusPerWorker: 8, command: [sleep, '3600']}\n");
  if (!spec) return std::unexpected(spec.error());
  const Tick now = NowMs();
  Change c;
  c.put_queues.push_back({"bench", now});
  for (int i = 0; i < f.nodes; ++i) c.put_nodes.push_back(BenchNode(i, now));
  std::int64_t task_id = 1;
  for (int i = 0; i < f.jobs; ++i) {
    enum {
      kRunning,
      kPending,
      kFinished
    } what = i < f.nodes               ? kRunning
             : i < f.nodes + f.pending ? kPending
                                       : kFinished;
    JobSpec s = *spec;
    s.name = "job-" + std::to_string(i);
    JobRecord j;
    j.id = i + 1;
    j.queue = s.queue;
    j.name = s.name;
    j.kind = std::string(KindName(s.kind));
    j.spec_json = DumpJson(JobSpecToJson(s));
    j.submit_ms = now - 3'600'000;
    UnitRecord u;
    u.job_id = j.id;
    u.pending_since_ms = j.submit_ms;
    if (what != kPending) {
      u.phase = what == kRunning ? UnitPhase::kRunning : UnitPhase::kSucceeded;
      u.attempt = 1;
      u.started_ms = u.first_started_ms = j.submit_ms + 1000;
      TaskRecord t;
      t.id = task_id++;
      t.job_id = j.id;
      t.attempt = 1;
      t.node = BenchNode(i % f.nodes, now).name;
      t.gpus = {0, 1, 2, 3, 4, 5, 6, 7};
      t.cpu_milli = 1000;
      t.memory_mib = 1024;
      t.state = what == kRunning ? TaskState::kRunning : TaskState::kSucceeded;
      t.created_ms = t.started_ms = u.started_ms;
      t.master_addr = "127.0.0.1";
      t.master_port = 29500;
      if (what == kFinished) {
        j.finished_ms = u.finished_ms = t.finished_ms = j.submit_ms + 2000;
      }
      c.put_tasks.push_back(std::move(t));
    }
    c.put_jobs.push_back(std::move(j));
    c.put_units.push_back(u);
  }
  auto r = (*store)->Commit(c);
  if (!r) return std::unexpected(r.error());
  return {};
}

struct CycleTimes {
  std::vector<double> off_ms, on_ms;
};

// Alternating blocks of cycles, metrics off and on; while on, a scraper reads every second,
// after a refresh of the node gauges (what tesserad's liveness loop does once a second).
CycleTimes MeasureCycles(Controller& c, const MetricsBenchFlags& f) {
  CycleTimes out;
  for (int b = 0; b < f.blocks; ++b) {
    for (bool on : {false, true}) {
      c.metrics().set_enabled(on);
      std::atomic<bool> stop{false};
      std::thread scraper;
      if (on) {
        scraper = std::thread([&] {
          while (!stop) {
            c.RefreshMetrics();
            (void)c.MetricsText();
            for (int i = 0; i < 10 && !stop; ++i)
              std::this_thread::sleep_for(std::chrono::milliseconds(100));
          }
        });
      }
      const auto block_end =
          Clock::now() + std::chrono::milliseconds(static_cast<int>(f.block_seconds * 1000));
      for (int i = 0; i < f.cycles || Clock::now() < block_end; ++i) {
        const auto start = Clock::now();
        c.RunSchedulingCycle();
        (on ? out.on_ms : out.off_ms).push_back(Ms(Clock::now() - start));
      }
      stop = true;
      if (scraper.joinable()) scraper.join();
    }
  }
  return out;
}

double GaugeOf(const std::string& text, const std::string& name) {
  const auto at = text.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stod(text.substr(at + name.size() + 2));
}

Status RunBenchMetrics(const MetricsBenchFlags& f) {
  auto format = ParseOutput(f.output);
  if (!format) return std::unexpected(format.error());
  if (f.nodes < 1 || f.pending < 0 || f.jobs < f.nodes + f.pending)
    return InvalidArgument("--jobs must be at least --nodes + --pending");
  const std::string dir = std::filesystem::temp_directory_path() /
                          ("tessera-bench-metrics-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  struct Cleanup {
    std::string dir;
    ~Cleanup() { std::filesystem::remove_all(dir); }
  } cleanup{dir};
  std::cerr << "bench metrics: writing " << f.jobs << " jobs on " << f.nodes << " nodes\n";
  if (auto s = WriteBenchStore(dir + "/state.db", f); !s) return std::unexpected(s.error());
  auto store = SqliteStore::Open(dir + "/state.db");
  if (!store) return std::unexpected(store.error());
  ControllerOptions options;
  options.metrics_gather_interval_ms = 1000;  // as tesserad runs
  auto controller = Controller::Create(store->get(), options);
  if (!controller) return std::unexpected(controller.error());
  Controller& c = **controller;
  c.RunSchedulingCycle();  // warm: the cluster and the scheduler built once
  std::cerr << "bench metrics: " << 2 * f.blocks * f.cycles << " cycles\n";
  const CycleTimes cycles = MeasureCycles(c, f);

  // Scrapes, each after a refresh of the node gauges (the lock hold reported is the refresh's).
  std::vector<double> scrape_ms, locked_ms;
  std::size_t bytes = 0;
  for (int i = 0; i < 5; ++i) {
    c.RefreshMetrics();
    const auto start = Clock::now();
    const std::string text = c.MetricsText();
    scrape_ms.push_back(Ms(Clock::now() - start));
    locked_ms.push_back(1000 * GaugeOf(text, "tessera_metrics_gather_locked_seconds"));
    bytes = text.size();
  }
  const double off = Median(cycles.off_ms), on = Median(cycles.on_ms);
  auto mean = [](const std::vector<double>& v) {
    double sum = 0;
    for (double x : v) sum += x;
    return v.empty() ? 0 : sum / static_cast<double>(v.size());
  };
  const double off_mean = mean(cycles.off_ms), on_mean = mean(cycles.on_ms);
  const double scrape_max = *std::max_element(scrape_ms.begin(), scrape_ms.end());
  Json result = {{"machine", "this machine; simulated GPUs, no agents"},
                 {"nodes", f.nodes},
                 {"jobs", f.jobs},
                 {"pendingJobs", f.pending},
                 {"cyclesMetricsOff", cycles.off_ms.size()},
                 {"cyclesMetricsOn", cycles.on_ms.size()},
                 {"cycleMedianMsMetricsOff", off},
                 {"cycleMedianMsMetricsOn", on},
                 {"cycleRatioOnOverOff", off > 0 ? on / off : 0},
                 {"cycleMeanMsMetricsOff", off_mean},
                 {"cycleMeanMsMetricsOn", on_mean},
                 {"cycleMeanRatioOnOverOff", off_mean > 0 ? on_mean / off_mean : 0},
                 {"scrapeMedianMs", Median(scrape_ms)},
                 {"scrapeMaxMs", scrape_max},
                 {"scrapeLockHeldMedianMs", Median(locked_ms)},
                 {"scrapeBytes", bytes}};
  if (*format != OutputFormat::kTable) {
    PrintStructured(result, *format);
    return {};
  }
  PrintTable({"MEASURE", "VALUE"},
             {{"cluster", std::to_string(f.nodes) + " simulated nodes x 8 GPUs, " +
                              std::to_string(f.jobs) + " jobs (" + std::to_string(f.pending) +
                              " pending)"},
              {"cycle median, metrics off", Number(off) + " ms"},
              {"cycle median, metrics on + 1 scrape/s", Number(on) + " ms"},
              {"ratio on/off (median)", Number(off > 0 ? on / off : 0)},
              {"cycle mean, off / on", Number(off_mean) + " ms / " + Number(on_mean) + " ms"},
              {"ratio on/off (mean)", Number(off_mean > 0 ? on_mean / off_mean : 0)},
              {"cycles measured, off / on",
               std::to_string(cycles.off_ms.size()) + " / " + std::to_string(cycles.on_ms.size())},
              {"/metrics answer (median, max)",
               Number(Median(scrape_ms)) + " ms, " + Number(scrape_max) + " ms"},
              {"longest hold of the controller lock", Number(Median(locked_ms)) + " ms"},
              {"/metrics size", std::to_string(bytes / 1024) + " KiB"}});
  return {};
}

}  // namespace

void RegisterBenchMetricsCommand(CLI::App& app) {
  CLI::App* bench = &BenchGroup(app);
  auto flags = std::make_shared<MetricsBenchFlags>();
  auto* cmd = bench->add_subcommand(
      "metrics", "Measure /metrics: the scheduling cycle with metrics on vs off, a scrape's time");
  cmd->add_option("--nodes", flags->nodes, "Simulated nodes of 8 GPUs")->capture_default_str();
  cmd->add_option("--pending", flags->pending, "Pending 8-GPU jobs")->capture_default_str();
  cmd->add_option("--jobs", flags->jobs, "Jobs in all (the rest finished)")->capture_default_str();
  cmd->add_option("--cycles", flags->cycles, "Cycles per mode and block, at least")
      ->capture_default_str();
  cmd->add_option("--block-seconds", flags->block_seconds, "Seconds per mode and block, at least")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 600.0));
  cmd->add_option("--blocks", flags->blocks, "Alternating off/on blocks")->capture_default_str();
  AddOutputFlag(cmd, &flags->output);
  cmd->callback([flags] { SetExitCode(RunOrReport([&] { return RunBenchMetrics(*flags); })); });
}

}  // namespace tessera::cli
