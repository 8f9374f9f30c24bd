// `tessera sim`: replay a trace through the scheduler on a simulated cluster.
//   --experiment allocation  the FGD paper's allocation experiment (placement policies)
//   --experiment replay      a job trace on a queue (queue policies), JCT and queueing
//   --experiment failures    large training gangs under failures (recovery policies), ETTR
//   --experiment colocation  an inference fleet with a daily cycle and offline batch work,
//                            with and without co-location (docs/colocation.md)
//   --experiment serving     an LLM request trace through simulated engine replicas under
//                            each router (docs/serving.md)
// Prints progress to stderr and a table to stdout; writes OUT/summary.json and OUT/report.html.
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/sim_export_replay.h"
#include "cli/sim_serving.h"
#include "core/rng.h"
#include "sched/placement/placement_policy.h"
#include "sched/queue/queue_policy.h"
#include "sched/recovery/recovery_policy.h"
#include "sim/allocation_experiment.h"
#include "sim/cluster_spec.h"
#include "sim/colocation_experiment.h"
#include "sim/colocation_plan.h"
#include "sim/colocation_summary.h"
#include "sim/failures/failure_file.h"
#include "sim/failures/failures_experiment.h"
#include "sim/failures/failures_summary.h"
#include "sim/failures/measured_recovery_times.h"
#include "sim/queue_file.h"
#include "sim/replay_simulation.h"
#include "sim/report/html_report.h"
#include "sim/report/html_util.h"
#include "sim/report/verdict.h"
#include "sim/summary.h"
#include "sim/trace/trace_reader.h"
#include "sim/workload_builder.h"
#include "spec/colocation_file.h"

namespace tessera::cli {

namespace {

struct SimFlags {
  std::string experiment = "replay";
  std::string trace;
  std::string from_export;  // replay: a live export (`tessera export`) instead of a trace
  std::string trace_format;
  bool skip_bad_rows = false;
  std::string cluster;
  std::string policies;
  std::string placement = "bestfit";
  int seeds = 1;
  std::uint64_t seed = 0;
  double restart_cost_seconds = 0;
  std::string queues;     // replay: queue tree YAML (docs/quotas.md); empty = a queue per user
  std::string queue_map;  // replay: CSV user,queue or job,queue (with --queues)
  std::vector<double> las_thresholds;
  int threads = 0;
  std::string out = "out/sim";
  bool list_policies = false;
  // --experiment failures (defaults in FailuresOptions, docs/failures.md).
  std::string failures;
  std::string job_gpus = "16384";
  std::string recovery = "requeue,replace,spares";
  std::string recovery_times;  // "" = the flags; "measured" = the live controller's (bench)
  std::string event_log;       // replay: every start, finish, resize, recovery, one a line
  double days = 30;
  double checkpoint_interval_seconds = 0;  // 0 = Young/Daly
  double checkpoint_cost_seconds = 5;
  double restart_seconds = 180;
  double detect_seconds = 60;
  double cold_start_seconds = 300;
  int spares_per_leaf = 1;
  int max_spares = -1;
  int shrink_unit = 16;
  int drain_after = 2;
  double drain_window_days = 7;
  std::vector<double> checkpoint_sweep;  // multiples of Young/Daly; empty = the default sweep
  // --experiment colocation (defaults in ColocationOptions, docs/colocation.md).
  std::string workload = "openb";
  std::string colocation;  // YAML config; empty = the defaults
  std::vector<double> oversell;
  std::string setups = "dedicated,shared,colocate";
  double hours = 24;
  double online_share = 0.5;
  double offline_load = 0.8;
  double target_utilisation = 0.7;
  double trough = 0.35;
  double usage_window_minutes = 10;
  double scale_down_window_minutes = 5;  // with --autoscaler kpa: 0 unless given
  std::string autoscaler = "hpa";
  bool scale_down_window_given = false;
  double step_seconds = 60;
  std::string load_trace;
  std::string plan;        // a plan file to run instead of drawing (docs/colocation.md)
  std::string write_plan;  // where to write the workload drawn or read
  std::vector<std::string> dedicated_online_models;
  ServingFlags serving;  // --experiment serving
};

// One policy per line: its name first, then what kind of policy it is.
void ListPolicies() {
  for (const auto& n : PlacementPolicyNames()) {
    std::cout << fmt::format(
        "{:<12} placement (--experiment allocation, or --placement for replay)\n", n);
  }
  for (const auto& n : QueuePolicyNames()) {
    std::cout << fmt::format("{:<12} queue (--experiment replay)\n", n);
  }
  for (const auto& n : RecoveryPolicyNames()) {
    std::cout << fmt::format(
        "{:<12} recovery (--experiment failures --recovery; +drain adds the drain rule)\n", n);
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

// One row per policy, once all have run: each duration column in the unit the report gives it
// (report::PickTimeUnit over the column's values), so that both show the same figures.
void PrintReplayTable(const nlohmann::json& results) {
  struct DurationColumn {
    const char* group;
    const char* member;  // nullptr: the group is the value
    const char* title;
  };
  constexpr DurationColumn kColumns[] = {{"jct_seconds", "mean", "JCT mean"},
                                         {"jct_seconds", "p95", "JCT p95"},
                                         {"queue_seconds", "mean", "queue mean"},
                                         {"makespan_seconds", nullptr, "makespan"}};
  auto value = [](const nlohmann::json& r, const DurationColumn& c) -> const nlohmann::json& {
    return c.member != nullptr ? r[c.group][c.member] : r[c.group];
  };
  std::vector<report::TimeUnit> units;
  std::cout << fmt::format("{:<16}", "policy");
  for (const auto& c : kColumns) {
    double max_seconds = 0;
    for (const auto& r : results) {
      if (value(r, c).is_number()) max_seconds = std::max(max_seconds, value(r, c).get<double>());
    }
    units.push_back(report::PickTimeUnit(max_seconds));
    std::cout << fmt::format(" {:>12}", fmt::format("{} {}", c.title, units.back().short_name));
  }
  std::cout << fmt::format(" {:>10} {:>9} {:>8}\n", "GPU alloc", "preempts", "unsched");
  for (const auto& r : results) {
    const std::string policy = r["policy"].get<std::string>();
    std::cout << fmt::format("{:<16}", r.value("oracle", false) ? policy + " (oracle)" : policy);
    for (std::size_t i = 0; i < std::size(kColumns); ++i) {
      const auto& v = value(r, kColumns[i]);
      std::cout << fmt::format(
          " {:>12}", v.is_number() ? fmt::format("{:.1f}", v.get<double>() / units[i].seconds)
                                   : std::string("-"));
    }
    std::cout << fmt::format(
        " {:>9.1f}% {:>9} {:>8}\n", 100 * r["gpu_allocation_ratio"].get<double>(),
        r["preemptions"].get<std::int64_t>(), r["jobs"]["unschedulable"].get<std::int64_t>());
  }
}

// Per leaf queue and policy: entitlement, share received, JCT and queueing (small trees only;
// summary.json has every queue).
void PrintQueueTable(const nlohmann::json& results, const QueueTree& tree) {
  if (tree.leaves().size() > 24) return;
  // One unit for the table's durations, over every queue, as the report's queue table picks.
  double max_seconds = 0;
  for (const auto& r : results) {
    for (const auto& [name, q] : r["queues"].items()) {
      for (const char* metric : {"jct_seconds", "queue_seconds"}) {
        for (const char* stat : {"mean", "p95"}) {
          if (q[metric][stat].is_number())
            max_seconds = std::max(max_seconds, q[metric][stat].get<double>());
        }
      }
    }
  }
  const report::TimeUnit unit = report::PickTimeUnit(max_seconds);
  std::cout << fmt::format("\n{:<28} {:<10} {:>8} {:>8} {:>12} {:>12} {:>9} {:>10}\n", "queue",
                           "policy", "entitled", "share",
                           fmt::format("JCT mean {}", unit.short_name),
                           fmt::format("queue mean {}", unit.short_name), "preempts", "GPU-h lost");
  for (int leaf : tree.leaves()) {
    const std::string& path = tree.node(leaf).path;
    for (const auto& r : results) {
      const auto& q = r["queues"][path];
      std::cout << fmt::format(
          "{:<28} {:<10} {:>7.1f}% {:>7.1f}% {:>12.1f} {:>12.1f} {:>9} {:>10.1f}\n", path,
          r["policy"].get<std::string>(), 100 * q["entitlement"].get<double>(),
          100 * q["share_mean"].get<double>(),
          q["jct_seconds"]["mean"].get<double>() / unit.seconds,
          q["queue_seconds"]["mean"].get<double>() / unit.seconds,
          q["preemptions"].get<std::int64_t>(), q["gpu_hours_lost_to_preemption"].get<double>());
    }
  }
}

int Fail(const std::string& message) {
  std::cerr << "tessera sim: " << message << "\n";
  return 2;
}

// Every experiment's output: OUT/summary.json and the offline OUT/report.html drawn from it.
int WriteSummaryAndReport(const std::string& out, const nlohmann::json& summary) {
  const auto dir = std::filesystem::path(out);
  if (!WriteFile(dir / "summary.json", summary.dump(2) + "\n")) {
    return Fail("--out: cannot write " + (dir / "summary.json").string());
  }
  if (!WriteFile(dir / "report.html", RenderHtmlReport(summary))) {
    return Fail("--out: cannot write " + (dir / "report.html").string());
  }
  std::cerr << fmt::format("wrote {} and {}\nverdict: {}\n", (dir / "summary.json").string(),
                           (dir / "report.html").string(), report::Verdict(summary));
  return 0;
}

// --experiment failures: no trace; one or a few gangs on the cluster under a failure model.
int RunFailures(const SimFlags& flags) {
  if (flags.cluster.empty()) return Fail("--cluster: is required");
  if (flags.failures.empty())
    return Fail("--failures: is required (llama3, a .yaml model or a failure file)");
  auto cluster = LoadCluster(flags.cluster);
  if (!cluster) return Fail("--cluster: " + cluster.error().message);
  FailuresOptions options;
  options.job_gpus.clear();
  for (const auto& g : SplitCommas(flags.job_gpus)) {
    try {
      std::size_t used = 0;
      const int gpus = std::stoi(g, &used);
      if (used != g.size()) throw std::invalid_argument(g);
      options.job_gpus.push_back(gpus);
    } catch (const std::exception&) {
      return Fail("--job-gpus: '" + g + "' is not a whole number");
    }
  }
  const auto seconds = [](double s) { return FromSeconds(s); };
  if (!(flags.days > 0)) return Fail("--days: must be positive");
  if (flags.checkpoint_interval_seconds < 0) return Fail("--checkpoint-interval: must be >= 0");
  if (flags.checkpoint_cost_seconds < 0) return Fail("--checkpoint-cost: must be >= 0");
  if (flags.restart_seconds < 0) return Fail("--restart-seconds: must be >= 0");
  if (flags.detect_seconds < 0) return Fail("--detect-seconds: must be >= 0");
  if (flags.cold_start_seconds < 0) return Fail("--cold-start-seconds: must be >= 0");
  if (flags.spares_per_leaf < 0) return Fail("--spares-per-leaf: must be >= 0");
  if (flags.drain_window_days <= 0) return Fail("--drain-window-days: must be positive");
  options.horizon = seconds(flags.days * 86400);
  options.checkpoint_interval = seconds(flags.checkpoint_interval_seconds);
  options.checkpoint_cost = seconds(flags.checkpoint_cost_seconds);
  options.restart = seconds(flags.restart_seconds);
  options.detect = seconds(flags.detect_seconds);
  options.cold_start = seconds(flags.cold_start_seconds);
  if (!flags.recovery_times.empty()) {
    // What tesserad achieves live (tessera bench recovery --write-preset): these four replace
    // --detect-seconds, --restart-seconds and --cold-start-seconds.
    auto measured = LoadMeasuredRecoveryTimes(flags.recovery_times);
    if (!measured) return Fail(measured.error().message);
    options.detect = seconds(measured->detect_seconds);
    options.restart = seconds(measured->restart_seconds);
    options.cold_start = seconds(measured->cold_start_seconds);
    options.cold_start_per_node = seconds(measured->cold_start_per_node_seconds);
    std::cerr << "recovery times measured live (" << measured->source << "): detect "
              << measured->detect_seconds << " s, restart " << measured->restart_seconds
              << " s, cold start " << measured->cold_start_seconds << " s + "
              << measured->cold_start_per_node_seconds << " s per node\n";
  }
  options.spares_per_leaf = flags.spares_per_leaf;
  options.max_spares = flags.max_spares;
  options.recovery.shrink_unit = flags.shrink_unit;
  options.drain.threshold = flags.drain_after;
  options.drain.window = seconds(flags.drain_window_days * 86400);
  options.policies = SplitCommas(flags.recovery);
  options.seed = flags.seed;
  options.seeds = flags.seeds;
  for (double f : flags.checkpoint_sweep) {
    if (!(f > 0)) return Fail("--checkpoint-sweep: factors must be positive");
  }
  if (!flags.checkpoint_sweep.empty()) options.sweep_factors = flags.checkpoint_sweep;

  const RecoveryTopology topology = BuildRecoveryTopology(*cluster, options.topology);
  if (std::any_of(options.policies.begin(), options.policies.end(),
                  [](const std::string& p) { return p.starts_with("spares"); })) {
    if (auto s = CheckSparesFit(topology, *cluster, flags.spares_per_leaf, "--spares-per-leaf"); !s)
      return Fail(s.error().message);
  }
  auto source = LoadFailureSource(flags.failures, *cluster, topology, options.horizon);
  if (!source) return Fail("--failures: " + source.error().message);
  std::error_code ec;
  std::filesystem::create_directories(flags.out, ec);
  if (ec) return Fail("--out: cannot create " + flags.out + ": " + ec.message());
  std::cerr << fmt::format(
      "cluster: {} nodes, {} GPUs (simulated), {} leaves; failures: {} ({}); {} days\n",
      cluster->node_count(), cluster->total_gpus(), topology.leaf_count(), flags.failures,
      source->model ? "model" : fmt::format("file, {} events", source->events.size()), flags.days);
  auto result = RunFailuresExperiment(*cluster, *source, options);
  if (!result) return Fail(result.error().message);

  SummaryHeader head{"failures", "", options.job_gpus.size(), "", 0, flags.cluster};
  nlohmann::json summary = SummaryHead(head, *cluster);
  summary.erase("trace");  // no trace: the workload is the job(s) in "job"
  summary.update(FailuresHeadJson(*result, options));
  std::cerr << fmt::format(
      "job MTBF {:.2f} h; checkpoint every {:.0f} s (Young/Daly {:.0f} s); {} failure events; "
      "{:.2f} s\n",
      result->job_mtbf_seconds / 3600, ToSeconds(result->checkpoint_interval),
      ToSeconds(result->young_daly_interval), result->failure_events, result->wall_seconds);
  std::cout << fmt::format("{:<16} {:>7} {:>12} {:>10} {:>10} {:>10} {:>8} {:>11}\n", "policy",
                           "ETTR", "GPU-h lost", "rec mean s", "rec p50 s", "rec p99 s", "interr.",
                           "best ckpt s");
  for (const auto& p : result->policies) {
    auto j = FailuresPolicyJson(p, *result, options);
    std::cout << fmt::format(
        "{:<16} {:>7.4f} {:>12.0f} {:>10} {:>10} {:>10} {:>8.1f} {:>11.0f}\n", p.policy, p.ettr,
        j["gpu_hours_lost"].get<double>(), Fmt(j["recovery_seconds"]["mean"], 0),
        Fmt(j["recovery_seconds"]["p50"], 0), Fmt(j["recovery_seconds"]["p99"], 0),
        j["interruptions"].get<double>(), ToSeconds(p.best_interval));
    summary["results"].push_back(std::move(j));
  }
  if (const int rc = WriteSummaryAndReport(flags.out, summary); rc != 0) return rc;
  const auto dir = std::filesystem::path(flags.out);
  if (source->model) {
    // The first draw as a failure file, to edit and replay (`--failures DIR/failures.csv`).
    const FailureSchedule first = GenerateFailures(*source->model, *cluster, topology,
                                                   options.horizon, Rng::Mix(options.seed, 0));
    if (!WriteFile(dir / "failures.csv", FailureCsv(first.events, *cluster, topology))) {
      return Fail("--out: cannot write " + (dir / "failures.csv").string());
    }
  }
  return 0;
}

// --experiment replay --failures FILE: the failure file's node failures (gpu, host, nic: the
// node is lost with its jobs' processes), detected --detect-seconds later (or as the live
// controller measured it, --recovery-times).
struct ReplayFailureSet {
  std::vector<NodeFailure> events;
  Tick detect = 0;
};

Result<ReplayFailureSet> ReplayFailures(const SimFlags& flags, const Cluster& cluster) {
  ReplayFailureSet out;
  if (flags.failures.empty()) return out;
  if (!flags.failures.ends_with(".csv")) {
    return InvalidArgument("--failures: with --experiment replay, a failure file (CSV) only");
  }
  const RecoveryTopology topology = BuildRecoveryTopology(cluster);
  auto events = LoadFailureFile(flags.failures, cluster, topology, kNever / 2);
  if (!events) return InvalidArgument("--failures: " + events.error().message);
  for (const FailureEvent& e : *events) {
    if (e.component == Component::kLeafSwitch || e.component == Component::kSoftware) {
      return InvalidArgument("--failures: " + flags.failures + ":" + std::to_string(e.line) +
                             ": with --experiment replay, gpu, host or nic failures only");
    }
    out.events.push_back({e.time, NodeId(e.target), e.repair < 0 ? kNever : e.repair});
  }
  out.detect = FromSeconds(flags.detect_seconds);
  if (!flags.recovery_times.empty()) {
    auto measured = LoadMeasuredRecoveryTimes(flags.recovery_times);
    if (!measured) return std::unexpected(measured.error());
    out.detect = FromSeconds(measured->detect_seconds);
  }
  return out;
}

// The workload of --plan, or drawn; written to --write-plan when asked.
Result<ColocationWorkload> ColocationWorkloadOf(const SimFlags& flags, const Cluster& cluster,
                                                const Trace& trace, ColocationOptions& options) {
  auto wl = flags.plan.empty() ? DrawColocationWorkload(cluster, trace.jobs, options)
                               : ReadColocationPlan(flags.plan, options);
  if (!wl) return wl;
  if (!flags.write_plan.empty()) {
    std::ofstream out(flags.write_plan);
    out << ColocationPlanJson(*wl, options).dump() << "\n";
    if (!out) return IoError("--write-plan: cannot write " + flags.write_plan);
  }
  return wl;
}

// --experiment colocation: services and offline tasks drawn from an openb pod list (LS, BE) or
// a synthetic LLM fleet, or read from a plan file; the setups compared on the same workload.
int RunColocation(const SimFlags& flags) {
  if (flags.cluster.empty()) return Fail("--cluster: is required");
  if (flags.workload == "openb" && flags.trace.empty() && flags.plan.empty()) {
    return Fail("--trace: is required for --workload openb (an openb pod list)");
  }
  if (!(flags.hours > 0)) return Fail("--hours: must be positive");
  auto cluster = LoadCluster(flags.cluster);
  if (!cluster) return Fail("--cluster: " + cluster.error().message);
  Trace trace;
  if (flags.workload == "openb" && flags.plan.empty()) {
    auto t = ReadTrace(flags.trace, TraceReadOptions{flags.trace_format, flags.skip_bad_rows});
    if (!t) return Fail(t.error().message);
    if (t->format != "openb-pods") {
      return Fail("--trace: " + flags.trace + " is " + t->format +
                  ", not an openb pod list (the workload needs its qos column)");
    }
    trace = std::move(*t);
  }
  ColocationConfig base;
  base.enabled = true;
  if (!flags.colocation.empty()) {
    auto c = LoadColocationConfig(flags.colocation);
    if (!c) return Fail("--colocation: " + c.error().message);
    base = *c;
  }
  std::vector<double> oversell = flags.oversell;
  if (oversell.empty()) {
    oversell = flags.colocation.empty() ? std::vector<double>{0, 0.5, 1}
                                        : std::vector<double>{base.oversell_permille / 1000.0};
  }
  ColocationOptions options;
  options.workload = flags.workload;
  options.horizon = FromSeconds(flags.hours * 3600);
  options.online_share = flags.online_share;
  options.offline_load = flags.offline_load;
  options.target_utilisation = flags.target_utilisation;
  options.trough = flags.trough;
  if (!(flags.usage_window_minutes >= 0)) return Fail("--usage-window: must be >= 0");
  options.usage_window = FromSeconds(flags.usage_window_minutes * 60);
  if (!(flags.scale_down_window_minutes >= 0)) return Fail("--scale-down-window: must be >= 0");
  options.scale_down_window = FromSeconds(flags.scale_down_window_minutes * 60);
  auto policy = ParseAutoscalePolicy(flags.autoscaler);
  if (!policy) {
    return Fail("--autoscaler: '" + flags.autoscaler + "' is unknown (" +
                std::string(kAutoscalePolicyNames) + ")");
  }
  options.autoscale_policy = *policy;
  if (*policy == AutoscalePolicy::kKpa && !flags.scale_down_window_given)
    options.scale_down_window = FromSeconds(kDefaultKpaScaleDownDelaySeconds);
  if (!(flags.step_seconds >= 1 && flags.step_seconds <= 3600))
    return Fail("--step-seconds: must be between 1 and 3600");
  options.step = FromSeconds(flags.step_seconds);
  options.placement = flags.placement;
  options.seed = flags.seed;
  options.dedicated_online_models = flags.dedicated_online_models;
  if (!flags.load_trace.empty()) {
    auto burst = ReadMinuteLoadFactors(flags.load_trace);
    if (!burst) return Fail("--load-trace: " + burst.error().message);
    options.burst = std::move(*burst);
  }
  for (const auto& name : SplitCommas(flags.setups)) {
    ColocationSetup s;
    s.colocation = base;
    if (name == "dedicated" || name == "shared") {
      s.name = name;
      s.mode =
          name == "dedicated" ? ColocationSetup::Mode::kDedicated : ColocationSetup::Mode::kShared;
      options.setups.push_back(s);
    } else if (name == "colocate") {
      for (double f : oversell) {
        if (!(f >= 0 && f <= 1)) return Fail("--oversell: each value must be between 0 and 1");
        s.colocation.oversell_permille = static_cast<std::int32_t>(std::lround(f * 1000));
        s.name = fmt::format("colocate-oversell-{:g}", f);
        options.setups.push_back(s);
      }
    } else {
      return Fail("--setups: '" + name + "' is unknown (dedicated, shared, colocate)");
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(flags.out, ec);
  if (ec) return Fail("--out: cannot create " + flags.out + ": " + ec.message());
  std::cerr << fmt::format(
      "cluster: {} nodes, {} GPUs (simulated); workload: {}; {} setups, {} h\n",
      cluster->node_count(), cluster->total_gpus(), flags.workload, options.setups.size(),
      flags.hours);
  auto workload = ColocationWorkloadOf(flags, *cluster, trace, options);
  if (!workload) return Fail(workload.error().message);
  auto result = RunColocationWorkload(*cluster, *workload, options);
  if (!result) return Fail(result.error().message);
  SummaryHeader head{"colocation", flags.trace,        trace.jobs.size(),
                     trace.format, trace.skipped_rows, flags.cluster};
  nlohmann::json summary = SummaryHead(head, *cluster);
  if (flags.trace.empty()) summary.erase("trace");
  summary.update(ColocationHeadJson(*result, options));
  std::cerr << fmt::format("{} services ({:.0f} GPUs at peak), {} offline tasks\n",
                           result->services, result->online_peak_gpus, result->offline_tasks);
  std::cout << fmt::format("{:<22} {:>8} {:>10} {:>10} {:>10} {:>10} {:>11} {:>9}\n", "setup",
                           "SLO", "SLO worst h", "GPU alloc", "GPU util", "oversold",
                           "offline GPUh", "evictions");
  for (const auto& r : result->runs) {
    std::cout << fmt::format(
        "{:<22} {:>7.2f}% {:>9.2f}% {:>9.1f}% {:>9.1f}% {:>9.1f}% {:>11.0f} {:>9}\n", r.name,
        100 * r.slo_attainment, 100 * r.slo_attainment_worst_hour, 100 * r.allocation_ratio,
        100 * r.utilisation, 100 * r.oversold_ratio, r.offline_gpu_hours_done, r.evictions);
    summary["results"].push_back(ColocationRunJson(r));
  }
  return WriteSummaryAndReport(flags.out, summary);
}

// --experiment serving: an LLM request trace, no cluster (docs/serving.md).
int RunServingSim(const SimFlags& flags) {
  if (flags.trace.empty()) return Fail("--trace: is required (a Mooncake or Azure LLM trace)");
  std::error_code ec;
  std::filesystem::create_directories(flags.out, ec);
  if (ec) return Fail("--out: cannot create " + flags.out + ": " + ec.message());
  auto summary = RunServingExperiment(flags.serving, flags.trace);
  if (!summary) return Fail(summary.error().message);
  return WriteSummaryAndReport(flags.out, *summary);
}

// --experiment replay --from-export FILE: a live cluster replayed and compared.
int RunFromExport(const SimFlags& flags) {
  if (flags.experiment != "replay") return Fail("--from-export: only with --experiment replay");
  if (!flags.trace.empty() || !flags.cluster.empty() || !flags.queues.empty() ||
      !flags.failures.empty()) {
    return Fail(
        "--from-export: the export holds the jobs, nodes and queue tree; no --trace, "
        "--cluster, --queues or --failures with it");
  }
  std::error_code ec;
  std::filesystem::create_directories(flags.out, ec);
  if (ec) return Fail("--out: cannot create " + flags.out + ": " + ec.message());
  auto summary = RunExportReplay(flags.from_export, flags.policies, flags.event_log);
  if (!summary) return Fail("--from-export: " + summary.error().message);
  return WriteSummaryAndReport(flags.out, *summary);
}

int RunSim(const SimFlags& flags) {
  if (flags.list_policies) {
    ListPolicies();
    return 0;
  }
  if (flags.experiment != "replay" && (!flags.queues.empty() || !flags.queue_map.empty())) {
    return Fail("--queues, --queue-map: only with --experiment replay");
  }
  if (flags.experiment == "failures") return RunFailures(flags);
  if (flags.experiment == "colocation") return RunColocation(flags);
  if (flags.experiment == "serving") return RunServingSim(flags);
  if (!flags.from_export.empty()) return RunFromExport(flags);
  if (flags.trace.empty()) return Fail("--trace: is required");
  if (flags.cluster.empty()) return Fail("--cluster: is required");
  if (flags.experiment != "allocation" && flags.experiment != "replay") {
    return Fail("--experiment: '" + flags.experiment +
                "' is unknown (allocation, replay, failures, colocation, serving)");
  }
  if (!flags.failures.empty() && flags.experiment != "replay") {
    return Fail("--failures: only with --experiment failures or replay");
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

  SummaryHeader head{flags.experiment, flags.trace,         trace->jobs.size(),
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
          std::cerr << fmt::format(
              "[{:>3}/{}] {:<10} seed {:<3} allocation at 100%: {}  ({:.2f} s)\n", done, total,
              run.policy, run.seed, a[100] ? fmt::format("{:.1f}%", 100 * *a[100]) : "-",
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
    std::vector<Workload> jobs = ToWorkloads(trace->jobs, *cluster);
    bool elastic = false;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const TraceJob& t = trace->jobs[i];
      if (t.min_workers > 0 && jobs[i].min_workers == 0) {
        return Fail("--trace: job " + t.id + ": min_workers..max_workers " +
                    std::to_string(t.min_workers) + ".." + std::to_string(t.max_workers) +
                    " must hold its size, a gang of whole nodes (gpus / GPUs per node)");
      }
      elastic |= jobs[i].min_workers > 0;
    }
    auto failures = ReplayFailures(flags, *cluster);
    if (!failures) return Fail(failures.error().message);
    // The queue tree: the file's (jobs assigned by user), or one queue per user.
    const Resources capacity = ClusterCapacity(*cluster);
    std::shared_ptr<const QueueTree> tree;
    if (!flags.queues.empty()) {
      auto t = LoadQueueTree(flags.queues, capacity);
      if (!t) return Fail("--queues: " + t.error().message);
      if (!flags.queue_map.empty()) {
        if (auto ok = ApplyQueueMap(jobs, *t, flags.queue_map); !ok) {
          return Fail("--queue-map: " + ok.error().message);
        }
      }
      if (auto ok = AssignQueues(jobs, *t, flags.queues); !ok)
        return Fail("--queues: " + ok.error().message);
      tree = std::make_shared<const QueueTree>(std::move(*t));
    } else {
      if (!flags.queue_map.empty()) return Fail("--queue-map: needs --queues");
      tree = std::make_shared<const QueueTree>(QueuePerUser(jobs, capacity));
    }
    if (flags.checkpoint_interval_seconds < 0) return Fail("--checkpoint-interval: must be >= 0");
    summary["queues"] = {
        {"file", flags.queues.empty() ? nlohmann::json(nullptr) : nlohmann::json(flags.queues)},
        {"count", tree->nodes().size()},
        {"leaves", tree->leaves().size()},
        {"reclaim_grace_seconds", ToSeconds(tree->reclaim_grace())}};
    const auto policies = SplitCommas(flags.policies.empty() ? "fifo" : flags.policies);
    for (const auto& p : policies) {
      ReplayOptions options;
      options.scheduler.queue_policy = p;
      options.scheduler.placement_policy = flags.placement;
      if (!flags.las_thresholds.empty()) {
        options.scheduler.queue.las_thresholds_gpu_seconds = flags.las_thresholds;
      }
      options.seed = flags.seed;
      options.restart_cost = FromSeconds(flags.restart_cost_seconds);
      options.checkpoint_interval = FromSeconds(flags.checkpoint_interval_seconds);
      options.scheduler.queues = tree;
      // As live: a job with an elastic range is resized (the simulator's default is off).
      options.scheduler.elastic = elastic;
      options.node_failures = failures->events;
      options.failure_detect = failures->detect;
      std::cerr << fmt::format("replaying {} jobs under {} ...\n", jobs.size(), p);
      options.record_events = !flags.event_log.empty();
      auto r = RunReplay(*cluster, jobs, options);
      if (!r) return Fail("--policy: " + r.error().message);
      if (!flags.event_log.empty()) {
        std::ofstream log(flags.event_log + (policies.size() > 1 ? "." + p : ""));
        for (const auto& line : r->events) log << line << "\n";
        if (!log) return Fail("--event-log: cannot write " + flags.event_log);
      }
      auto j = ReplayResultJson(*r);
      std::cerr << fmt::format("  {} done: {} events, {} scheduling cycles, {:.2f} s\n", p,
                               r->event_count, r->schedule_calls, r->wall_seconds);
      summary["results"].push_back(std::move(j));
    }
    PrintReplayTable(summary["results"]);
    PrintQueueTable(summary["results"], *tree);
  }
  return WriteSummaryAndReport(flags.out, summary);
}

}  // namespace

void RegisterSimCommand(CLI::App& app) {
  auto flags = std::make_shared<SimFlags>();
  auto* sim =
      app.add_subcommand("sim", "Replay a trace through the scheduler on a simulated cluster");
  sim->add_option("--experiment", flags->experiment,
                  "allocation | replay | failures | colocation | serving")
      ->capture_default_str();
  sim->add_option("--trace", flags->trace, "trace file (format recognised from its header)");
  sim->add_option("--from-export", flags->from_export,
                  "replay: a live cluster's export (tessera export -o FILE) instead of --trace "
                  "and --cluster, on its nodes with its policies, seed and recorded cycles, "
                  "compared with what it decided");
  sim->add_option("--trace-format", flags->trace_format,
                  "force the trace format: openb-pods, itp, muri, philly, sacct, csv");
  sim->add_flag("--skip-bad-rows", flags->skip_bad_rows,
                "skip and count malformed rows instead of stopping");
  sim->add_option("--cluster", flags->cluster,
                  "NxG[:MODEL], an openb node list, Muri's n8g8.csv, or a YAML file");
  sim->add_option("--policy", flags->policies, "comma-separated policies (see --list-policies)");
  sim->add_option("--placement", flags->placement, "placement policy for replay")
      ->capture_default_str();
  sim->add_option("--seeds", flags->seeds, "seeds per policy (allocation)")->capture_default_str();
  sim->add_option("--seed", flags->seed, "base seed")->capture_default_str();
  sim->add_option("--restart-cost", flags->restart_cost_seconds,
                  "seconds of run time a preempted job loses")
      ->capture_default_str();
  sim->add_option(
      "--queues", flags->queues,
      "replay: queue tree YAML (docs/quotas.md); default: every user a queue with an equal share");
  sim->add_option("--queue-map", flags->queue_map,
                  "replay: CSV user,queue or job,queue assigning jobs to leaf queues of --queues");
  sim->add_option("--las-thresholds", flags->las_thresholds, "las queue thresholds in GPU-seconds")
      ->delimiter(',');
  sim->add_option("--threads", flags->threads, "worker threads (0 = one per core)")
      ->capture_default_str();
  sim->add_option("--out", flags->out, "output directory")->capture_default_str();
  sim->add_flag("--list-policies", flags->list_policies,
                "list policy names, one per line, and exit");
  // --experiment failures (docs/failures.md).
  sim->add_option("--failures", flags->failures,
                  "failures: a preset (llama3, llama3-lemons, none), a .yaml model, or a CSV file "
                  "time_seconds,component,target[,repair_seconds]; replay: a CSV file of node "
                  "failures (gpu, host, nic), each job on a lost node restarts (requeue)");
  sim->add_option("--job-gpus", flags->job_gpus,
                  "failures: GPUs of the gang; comma-separated for several gangs")
      ->capture_default_str();
  sim->add_option("--recovery", flags->recovery,
                  "failures: comma-separated recovery policies (requeue, replace, spares, shrink; "
                  "NAME+drain adds the drain rule)")
      ->capture_default_str();
  sim->add_option("--days", flags->days, "failures: simulated days")->capture_default_str();
  sim->add_option("--checkpoint-interval", flags->checkpoint_interval_seconds,
                  "seconds of run time between checkpoints; failures: 0 = Young/Daly; replay: for "
                  "jobs the trace gives none, 0 = preemption loses no progress")
      ->capture_default_str();
  sim->add_option("--checkpoint-cost", flags->checkpoint_cost_seconds,
                  "failures: seconds training stalls per checkpoint")
      ->capture_default_str();
  sim->add_option("--restart-seconds", flags->restart_seconds,
                  "failures: seconds per restart (checkpoint reload, process start, NCCL init)")
      ->capture_default_str();
  sim->add_option("--detect-seconds", flags->detect_seconds,
                  "failures, replay --failures: seconds from a failure to its detection")
      ->capture_default_str();
  sim->add_option("--event-log", flags->event_log,
                  "replay: write every arrival, start, finish, resize and recovery here, one a "
                  "line (ms: what), .POLICY appended with several policies");
  sim->add_option("--recovery-times", flags->recovery_times,
                  "failures: measured = detection, restart and cold start as this controller "
                  "achieves them live (built in from tessera bench recovery --write-preset), or "
                  "a FILE that bench wrote; replaces the three flags");
  sim->add_option("--cold-start-seconds", flags->cold_start_seconds,
                  "failures: seconds to bring up nodes new to the job (not hot spares)")
      ->capture_default_str();
  sim->add_option("--spares-per-leaf", flags->spares_per_leaf,
                  "failures: hot spare nodes kept per leaf (spares policy)")
      ->capture_default_str();
  sim->add_option("--max-spares", flags->max_spares,
                  "failures: cap on hot spares in all (-1 = none)")
      ->capture_default_str();
  sim->add_option("--shrink-unit", flags->shrink_unit,
                  "failures: workers per data-parallel replica (shrink policy)")
      ->capture_default_str();
  sim->add_option(
         "--drain-after", flags->drain_after,
         "failures: drain a node after this many failures within --drain-window-days (+drain)")
      ->capture_default_str();
  sim->add_option("--drain-window-days", flags->drain_window_days,
                  "failures: window of the drain rule")
      ->capture_default_str();
  sim->add_option("--checkpoint-sweep", flags->checkpoint_sweep,
                  "failures: checkpoint intervals to try, as multiples of the Young/Daly interval "
                  "(default 0.25,0.5,0.71,1,1.41,2,4)")
      ->delimiter(',');
  // --experiment colocation (docs/colocation.md).
  sim->add_option("--workload", flags->workload,
                  "colocation: openb (LS pods online, BE offline; needs --trace) or fleet (LLM "
                  "serving and batch inference)")
      ->capture_default_str();
  sim->add_option("--colocation", flags->colocation,
                  "colocation: YAML config (oversell, online, offline, evictionCostSeconds)");
  sim->add_option(
         "--oversell", flags->oversell,
         "colocation: oversell factors to compare, 0..1 (default 0,0.5,1, or the config's)")
      ->delimiter(',');
  sim->add_option("--setups", flags->setups,
                  "colocation: dedicated, shared, colocate (one per --oversell)")
      ->capture_default_str();
  sim->add_option("--hours", flags->hours, "colocation: simulated hours")->capture_default_str();
  sim->add_option("--online-share", flags->online_share,
                  "colocation: the fleet's GPUs at peak ÷ cluster GPUs")
      ->capture_default_str();
  sim->add_option("--offline-load", flags->offline_load,
                  "colocation: offered offline GPU-time ÷ cluster GPU-time")
      ->capture_default_str();
  sim->add_option("--target-utilisation", flags->target_utilisation,
                  "colocation: per-replica load the autoscaler aims at and the SLO allows")
      ->capture_default_str();
  sim->add_option("--trough", flags->trough,
                  "colocation: the daily load curve's lowest point ÷ its peak")
      ->capture_default_str();
  sim->add_option("--usage-window", flags->usage_window_minutes,
                  "colocation: minutes over which a replica's highest use is what the scheduler "
                  "sees (oversell credit)")
      ->capture_default_str();
  sim->add_option("--load-trace", flags->load_trace,
                  "colocation: Azure LLM inference CSV whose per-minute request rate modulates the "
                  "daily curve");
  sim->add_option("--scale-down-window", flags->scale_down_window_minutes,
                  "colocation: minutes over which the autoscaler keeps the most replicas wanted "
                  "before scaling down (HPA's default 5; Knative's scale-down delay 0 with "
                  "--autoscaler kpa)")
      ->capture_default_str()
      ->each([flags](const std::string&) { flags->scale_down_window_given = true; });
  sim->add_option("--autoscaler", flags->autoscaler,
                  "colocation: the autoscaler's policy, hpa (Kubernetes HPA) or kpa (Knative's "
                  "stable and panic windows)")
      ->capture_default_str();
  sim->add_option("--step-seconds", flags->step_seconds,
                  "colocation: seconds per step (the autoscaler and the scheduler act once a step)")
      ->capture_default_str();
  sim->add_option("--write-plan", flags->write_plan,
                  "colocation: write the workload (services' loads per step, offline tasks) to "
                  "this JSON file, for bench/colocation_live.py or --plan");
  sim->add_option("--plan", flags->plan,
                  "colocation: run the workload of this plan file instead of drawing one (its "
                  "step, warm-up, hours and windows too)");
  sim->add_option("--dedicated-online-models", flags->dedicated_online_models,
                  "colocation: dedicated setup: these GPU models' nodes are the online pool, "
                  "the rest offline (default: ceil(1.15 x peak share) of each model's nodes)")
      ->delimiter(',');
  AddServingFlags(sim, &flags->serving);  // --experiment serving (docs/serving.md)
  sim->callback([flags] { SetExitCode(RunSim(*flags)); });
}

}  // namespace tessera::cli
