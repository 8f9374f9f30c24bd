// `tessera sim`: replay a trace through the scheduler on a simulated cluster.
//   --experiment allocation  the FGD paper's allocation experiment (placement policies)
//   --experiment replay      a job trace on a queue (queue policies), JCT and queueing
// Prints progress to stderr and a table to stdout; writes OUT/summary.json and OUT/report.html.
#include <fmt/core.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "sched/placement/placement_policy.h"
#include "sched/queue/queue_policy.h"
#include "sim/allocation_experiment.h"
#include "sim/cluster_spec.h"
#include "sim/replay_simulation.h"
#include "sim/report/html_report.h"
#include "sim/summary.h"
#include "sim/trace/trace_reader.h"
#include "sim/workload_builder.h"

namespace tessera::cli {

namespace {

struct SimFlags {
  std::string experiment = "replay";
  std::string trace;
  std::string trace_format;
  bool skip_bad_rows = false;
  std::string cluster;
  std::string policies;
  std::string placement = "bestfit";
  int seeds = 1;
  std::uint64_t seed = 0;
  double restart_cost_seconds = 0;
  std::vector<double> las_thresholds;
  int threads = 0;
  std::string out = "out/sim";
  bool list_policies = false;
};

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// One policy per line: its name first, then what kind of policy it is.
void ListPolicies() {
  for (const auto& n : PlacementPolicyNames()) {
    std::cout << fmt::format("{:<12} placement (--experiment allocation, or --placement for replay)\n", n);
  }
  for (const auto& n : QueuePolicyNames()) {
    std::cout << fmt::format("{:<12} queue (--experiment replay)\n", n);
  }
}

std::string Fmt(const nlohmann::json& v, int precision = 1) {
  if (v.is_null()) return "-";
  return fmt::format("{:.{}f}", v.get<double>(), precision);
}

bool WriteFile(const std::filesystem::path& p, const std::string& content) {
  std::ofstream f(p, std::ios::binary);
  f << content;
  return static_cast<bool>(f);
}

int Fail(const std::string& message) {
  std::cerr << "tessera sim: " << message << "\n";
  return 2;
}

int RunSim(const SimFlags& flags) {
  if (flags.list_policies) {
    ListPolicies();
    return 0;
  }
  if (flags.trace.empty()) return Fail("--trace: is required");
  if (flags.cluster.empty()) return Fail("--cluster: is required");
  if (flags.experiment != "allocation" && flags.experiment != "replay") {
    return Fail("--experiment: '" + flags.experiment + "' is unknown (allocation, replay)");
  }
  auto cluster = LoadCluster(flags.cluster);
  if (!cluster) return Fail("--cluster: " + cluster.error().message);
  TraceReadOptions read_options{flags.trace_format, flags.skip_bad_rows};
  auto trace = ReadTrace(flags.trace, read_options);
  if (!trace) return Fail(trace.error().message);
  if (trace->skipped_rows > 0) {
    std::cerr << fmt::format("skipped {} malformed rows of {}\n", trace->skipped_rows, flags.trace);
  }
  std::error_code ec;
  std::filesystem::create_directories(flags.out, ec);
  if (ec) return Fail("--out: cannot create " + flags.out + ": " + ec.message());

  SummaryHeader head{flags.experiment, flags.trace,      trace->jobs.size(),
                     trace->format,    trace->skipped_rows, flags.cluster};
  nlohmann::json summary = SummaryHead(head, *cluster);
  std::cerr << fmt::format("cluster: {} nodes, {} GPUs (simulated); trace: {} jobs ({})\n",
                           cluster->node_count(), cluster->total_gpus(), trace->jobs.size(),
                           trace->format);

  if (flags.experiment == "allocation") {
    AllocationOptions options;
    if (!flags.policies.empty()) options.policies = SplitCommas(flags.policies);
    options.seeds = flags.seeds;
    options.base_seed = flags.seed;
    options.threads = flags.threads;
    auto results = RunAllocationExperiment(
        *cluster, trace->jobs, options, [](int done, int total, const AllocationRun& run) {
          const auto& a = run.allocation;
          std::cerr << fmt::format("[{:>3}/{}] {:<10} seed {:<3} allocation at 100%: {}  ({:.2f} s)\n",
                                   done, total, run.policy, run.seed,
                                   a[100] ? fmt::format("{:.1f}%", 100 * *a[100]) : "-",
                                   run.wall_seconds);
        });
    if (!results) return Fail(results.error().message);
    std::cout << fmt::format("{:<12} {:>6} {:>12} {:>12} {:>12} {:>14}\n", "policy", "seeds",
                             "alloc@80%", "alloc@100%", "alloc@130%", "frag@100%");
    for (const auto& r : *results) {
      auto j = AllocationResultJson(r);
      auto pct = [&](const char* key, int b) {
        const auto& v = j[key][b];
        return v.is_null() ? std::string("-") : fmt::format("{:.1f}%", 100 * v.get<double>());
      };
      std::cout << fmt::format("{:<12} {:>6} {:>12} {:>12} {:>12} {:>14}\n", r.policy, r.seeds,
                               pct("allocation_at_demand", 80), pct("allocation_at_demand", 100),
                               pct("allocation_at_demand", 130),
                               pct("fragmentation_at_demand", 100));
      summary["results"].push_back(std::move(j));
    }
  } else {
    std::vector<Workload> jobs;
    jobs.reserve(trace->jobs.size());
    for (std::size_t i = 0; i < trace->jobs.size(); ++i) {
      jobs.push_back(ToWorkload(trace->jobs[i], *cluster, JobId(static_cast<std::uint32_t>(i))));
    }
    const auto policies = SplitCommas(flags.policies.empty() ? "fifo" : flags.policies);
    std::cout << fmt::format("{:<16} {:>12} {:>12} {:>12} {:>12} {:>10} {:>9} {:>8}\n", "policy",
                             "JCT mean s", "JCT p95 s", "queue mean s", "makespan s", "GPU alloc",
                             "preempts", "unsched");
    for (const auto& p : policies) {
      ReplayOptions options;
      options.scheduler.queue_policy = p;
      options.scheduler.placement_policy = flags.placement;
      if (!flags.las_thresholds.empty()) {
        options.scheduler.queue.las_thresholds_gpu_seconds = flags.las_thresholds;
      }
      options.seed = flags.seed;
      options.restart_cost = FromSeconds(flags.restart_cost_seconds);
      std::cerr << fmt::format("replaying {} jobs under {} ...\n", jobs.size(), p);
      auto r = RunReplay(*cluster, jobs, options);
      if (!r) return Fail("--policy: " + r.error().message);
      auto j = ReplayResultJson(*r);
      std::cerr << fmt::format("  {} done: {} events, {} scheduling cycles, {:.2f} s\n", p,
                               r->event_count, r->schedule_calls, r->wall_seconds);
      const std::string label = r->oracle ? p + " (oracle)" : p;
      std::cout << fmt::format("{:<16} {:>12} {:>12} {:>12} {:>12} {:>9.1f}% {:>9} {:>8}\n", label,
                               Fmt(j["jct_seconds"]["mean"]), Fmt(j["jct_seconds"]["p95"]),
                               Fmt(j["queue_seconds"]["mean"]), Fmt(j["makespan_seconds"]),
                               100 * j["gpu_allocation_ratio"].get<double>(), r->preemptions,
                               j["jobs"]["unschedulable"].get<std::int64_t>());
      summary["results"].push_back(std::move(j));
    }
  }
  const auto dir = std::filesystem::path(flags.out);
  if (!WriteFile(dir / "summary.json", summary.dump(2) + "\n")) {
    return Fail("--out: cannot write " + (dir / "summary.json").string());
  }
  if (!WriteFile(dir / "report.html", RenderHtmlReport(summary))) {
    return Fail("--out: cannot write " + (dir / "report.html").string());
  }
  std::cerr << fmt::format("wrote {} and {}\n", (dir / "summary.json").string(),
                           (dir / "report.html").string());
  return 0;
}

}  // namespace

void RegisterSimCommand(CLI::App& app) {
  auto flags = std::make_shared<SimFlags>();
  auto* sim = app.add_subcommand("sim", "Replay a trace through the scheduler on a simulated cluster");
  sim->add_option("--experiment", flags->experiment, "allocation | replay")->capture_default_str();
  sim->add_option("--trace", flags->trace, "trace file (format recognised from its header)");
  sim->add_option("--trace-format", flags->trace_format, "force the trace format: openb-pods, itp, muri, philly, csv");
  sim->add_flag("--skip-bad-rows", flags->skip_bad_rows, "skip and count malformed rows instead of stopping");
  sim->add_option("--cluster", flags->cluster, "NxG[:MODEL], an openb node list, Muri's n8g8.csv, or a YAML file");
  sim->add_option("--policy", flags->policies, "comma-separated policies (see --list-policies)");
  sim->add_option("--placement", flags->placement, "placement policy for replay")->capture_default_str();
  sim->add_option("--seeds", flags->seeds, "seeds per policy (allocation)")->capture_default_str();
  sim->add_option("--seed", flags->seed, "base seed")->capture_default_str();
  sim->add_option("--restart-cost", flags->restart_cost_seconds, "seconds of run time a preempted job loses")->capture_default_str();
  sim->add_option("--las-thresholds", flags->las_thresholds, "las queue thresholds in GPU-seconds")->delimiter(',');
  sim->add_option("--threads", flags->threads, "worker threads (0 = one per core)")->capture_default_str();
  sim->add_option("--out", flags->out, "output directory")->capture_default_str();
  sim->add_flag("--list-policies", flags->list_policies, "list policy names, one per line, and exit");
  sim->callback([flags] { SetExitCode(RunSim(*flags)); });
}

}  // namespace tessera::cli
