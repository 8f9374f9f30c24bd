// `tessera bench schedule`: the scheduler's speed at the 10,000-GPU scale on one core, e.g.
//   tessera bench schedule --nodes 1250 --gpus-per-node 8 --pending 100000 --out bench.json
// Prints a table and writes JSON with placements_per_second, gang_1024_ms, machine and the
// baseline measured side by side. See docs/benchmarks.md.
// `tessera bench topology`: placement quality of topology-aware against greedy gang placement
// on one trace replayed in the simulator, e.g.
//   tessera bench topology --trace llm-10k.csv --cluster examples/config/clusters/llm-10k.yaml
// See docs/topology.md and docs/results.md §3.
#include <fmt/core.h>

#include <fstream>
#include <iostream>
#include <memory>

#include "cli/bench_group.h"
#include "cli/commands.h"
#include "sim/cluster_spec.h"
#include "sim/policy_workload.h"
#include "sim/schedule_benchmark.h"
#include "sim/topology_experiment.h"
#include "sim/trace/trace_reader.h"
#include "sim/workload_builder.h"

namespace tessera::cli {

namespace {

struct BenchScheduleFlags {
  ScheduleBenchOptions options;
  std::string out;
};

int Fail(const std::string& message, const char* command = "schedule") {
  std::cerr << "tessera bench " << command << ": " << message << "\n";
  return 2;
}

struct BenchTopologyFlags {
  std::string trace;
  std::string cluster;
  TopologyExperimentOptions options;
  std::string out;
};

int RunBenchTopology(const BenchTopologyFlags& flags) {
  auto fail = [](const std::string& m) { return Fail(m, "topology"); };
  if (flags.trace.empty()) return fail("--trace: is required");
  if (flags.cluster.empty()) return fail("--cluster: is required");
  auto cluster = LoadCluster(flags.cluster);
  if (!cluster) return fail("--cluster: " + cluster.error().message);
  auto trace = ReadTrace(flags.trace, {});
  if (!trace) return fail(trace.error().message);
  std::vector<Workload> jobs = ToWorkloads(trace->jobs, *cluster);
  std::cerr << fmt::format("cluster: {} nodes, {} GPUs; trace: {} jobs; {} / {}\n",
                           cluster->node_count(), cluster->total_gpus(), jobs.size(),
                           flags.options.queue_policy, flags.options.placement_policy);
  auto rows = RunTopologyExperiment(*cluster, jobs, flags.options);
  if (!rows) return fail(rows.error().message);
  std::cout << "| gang placement | class | jobs | within preferred | within required | leaves "
               "(fewest) | slowed | mean slowdown | JCT mean h | JCT p95 h | queue mean h |\n"
               "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& r : *rows) {
    for (const auto& c : r.classes) {
      auto share = [](std::int64_t n, double s) {
        return n > 0 ? fmt::format("{:.1f}%", 100 * s) : std::string("-");
      };
      std::cout << fmt::format(
          "| {} | {} | {} | {} | {} | {:.2f} ({:.2f}) | {:.1f}% | {:.3f} | {:.2f} | {:.2f} | "
          "{:.2f} |\n",
          r.gang_placement, c.name, c.jobs, share(c.with_prefer, c.within_preferred),
          share(c.with_require, c.within_required), c.mean_inner_domains, c.mean_min_inner_domains,
          100 * c.slowed, c.mean_slowdown, c.jct_mean_s / 3600, c.jct_p95_s / 3600,
          c.queue_mean_s / 3600);
    }
    std::cerr << fmt::format(
        "{}: makespan {:.1f} h, GPU allocation {:.1f}%, {} unschedulable, "
        "{:.1f} s\n",
        r.gang_placement, r.makespan_s / 3600, 100 * r.gpu_allocation, r.unschedulable,
        r.wall_seconds);
  }
  if (!flags.out.empty()) {
    nlohmann::json j = TopologyExperimentJson(flags.options, *rows);
    j["trace"] = flags.trace;
    j["cluster"] = flags.cluster;
    std::ofstream f(flags.out, std::ios::binary);
    f << j.dump(2) << "\n";
    if (!f) return fail("--out: cannot write " + flags.out);
    std::cerr << "wrote " << flags.out << "\n";
  }
  return 0;
}

// `tessera bench policies`: backfill reservations, elastic resizing and heterogeneity-aware
// GPU choice against their baselines on one trace (docs/results.md §8).
struct BenchPoliciesFlags {
  std::string trace;
  std::string cluster;
  TopologyExperimentOptions options;
  std::vector<std::string> variants = {"fifo", "easy", "domain", "domain+elastic"};
  double elastic_min = 0;  // 0 = no elastic jobs
  double elastic_max = 1;
  std::string gpu_speeds;
  std::string out;
};

int RunBenchPolicies(const BenchPoliciesFlags& flags) {
  auto fail = [](const std::string& m) { return Fail(m, "policies"); };
  if (flags.trace.empty()) return fail("--trace: is required");
  if (flags.cluster.empty()) return fail("--cluster: is required");
  if (flags.elastic_min < 0 || flags.elastic_min > 1)
    return fail("--elastic-min: must be in [0, 1]");
  if (flags.elastic_max < 1) return fail("--elastic-max: must be at least 1");
  TopologyExperimentOptions options = flags.options;
  for (const auto& name : flags.variants) {
    auto v = ParsePolicyVariant(name);
    if (!v) return fail("--variants: " + v.error().message);
    options.variants.push_back(*v);
  }
  auto cluster = LoadCluster(flags.cluster);
  if (!cluster) return fail("--cluster: " + cluster.error().message);
  auto trace = ReadTrace(flags.trace, {});
  if (!trace) return fail(trace.error().message);
  std::vector<Workload> jobs = ToWorkloads(trace->jobs, *cluster);
  std::size_t elastic = 0;
  if (flags.elastic_min > 0)
    elastic = MakeMultiNodeJobsElastic(jobs, flags.elastic_min, flags.elastic_max);
  if (!flags.gpu_speeds.empty()) {
    auto speeds = ParseGpuSpeeds(flags.gpu_speeds);
    if (!speeds) return fail(speeds.error().message);
    SetGpuSpeeds(jobs, *cluster, *speeds);
  }
  std::cerr << fmt::format(
      "cluster: {} nodes, {} GPUs; trace: {} jobs ({} elastic); placement {}\n",
      cluster->node_count(), cluster->total_gpus(), jobs.size(), elastic, options.placement_policy);
  auto rows = RunTopologyExperiment(*cluster, jobs, options);
  if (!rows) return fail(rows.error().message);
  std::cout << "| variant | class | jobs | JCT mean h | JCT p95 h | queue mean h | queue p95 h | "
               "within preferred | mean slowdown | GPU speed |\n"
               "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& r : *rows) {
    for (const auto& c : r.classes) {
      std::cout << fmt::format(
          "| {} | {} | {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {} | {:.3f} | {:.3f} |\n",
          r.gang_placement, c.name, c.jobs, c.jct_mean_s / 3600, c.jct_p95_s / 3600,
          c.queue_mean_s / 3600, c.queue_p95_s / 3600,
          c.with_prefer > 0 ? fmt::format("{:.1f}%", 100 * c.within_preferred) : std::string("-"),
          c.mean_slowdown, c.mean_gpu_speed);
    }
    std::cerr << fmt::format(
        "{}: makespan {:.1f} h, GPU allocation {:.1f}%, {} resizes, {} unschedulable, {:.1f} s\n",
        r.gang_placement, r.makespan_s / 3600, 100 * r.gpu_allocation, r.resizes, r.unschedulable,
        r.wall_seconds);
  }
  if (!flags.out.empty()) {
    nlohmann::json j = TopologyExperimentJson(options, *rows);
    j["trace"] = flags.trace;
    j["cluster"] = flags.cluster;
    j["elastic_jobs"] = elastic;
    j["elastic_min"] = flags.elastic_min;
    j["elastic_max"] = flags.elastic_max;
    j["elastic_scaling"] = options.elastic_scaling;
    j["gpu_speeds"] = flags.gpu_speeds;
    std::ofstream f(flags.out, std::ios::binary);
    f << j.dump(2) << "\n";
    if (!f) return fail("--out: cannot write " + flags.out);
    std::cerr << "wrote " << flags.out << "\n";
  }
  return 0;
}

int RunBenchSchedule(const BenchScheduleFlags& flags) {
  const auto& o = flags.options;
  if (o.nodes < 1 || o.gpus_per_node < 1 || o.gpus_per_node > 16) {
    return Fail("--nodes must be at least 1 and --gpus-per-node 1..16");
  }
  std::cerr << fmt::format(
      "cluster: {} nodes x {} GPUs, leaves of {} nodes, spines of {} leaves; {} pending "
      "single-GPU jobs; placement {}; {} runs each\n",
      o.nodes, o.gpus_per_node, o.nodes_per_leaf, o.leaves_per_spine, o.pending, o.policy,
      o.repeats);
  auto r = RunScheduleBench(o);
  if (!r) return Fail(r.error().message);
  const nlohmann::json j = ScheduleBenchJson(o, *r);
  std::cout << fmt::format("{:<44} {:>14} {:>14} {:>8}\n", "measure", "tessera", "plain scan",
                           "ratio");
  std::cout << fmt::format("{:<44} {:>14.0f} {:>14.0f} {:>7.1f}x\n",
                           "single-GPU placements per second", r->placements_per_second,
                           r->baseline_placements_per_second,
                           r->placements_per_second / r->baseline_placements_per_second);
  std::cout << fmt::format("{:<44} {:>14.0f} {:>14.0f} {:>7.1f}x\n",
                           "  the same per CPU second (this thread)",
                           r->placements / (r->schedule_cpu_ms / 1000),
                           r->placements / (r->baseline_schedule_cpu_ms / 1000),
                           r->baseline_schedule_cpu_ms / r->schedule_cpu_ms);
  std::cout << fmt::format("{:<44} {:>14.3f} {:>14.3f} {:>7.1f}x\n",
                           fmt::format("{}-GPU gang, require spine / prefer leaf, ms", o.gang_gpus),
                           r->gang_ms, r->gang_scan_ms, r->gang_scan_ms / r->gang_ms);
  std::cout << fmt::format("{:<44} {:>14} {:>14}\n", "", "", "greedy gang");
  std::cout << fmt::format("{:<44} {:>14.3f} {:>14.3f} {:>7.1f}x\n", "  gang, ms", r->gang_ms,
                           r->gang_baseline_ms, r->gang_baseline_ms / r->gang_ms);
  std::cout << fmt::format("{:<44} {:>14} {:>14}\n", "  gang spans (leaves)",
                           fmt::format("{} ({})", r->gang_span, r->gang_leaves),
                           fmt::format("{} ({})", r->gang_baseline_span, r->gang_baseline_leaves));
  std::cout << fmt::format("{:<44} {:>14.3f}\n", "  gang on the empty cluster, ms",
                           r->gang_empty_ms);
  std::cout << "machine: " << j["machine"].get<std::string>() << "\n";
  if (!flags.out.empty()) {
    std::ofstream f(flags.out, std::ios::binary);
    f << j.dump(2) << "\n";
    if (!f) return Fail("--out: cannot write " + flags.out);
    std::cerr << "wrote " << flags.out << "\n";
  }
  return 0;
}

}  // namespace

void RegisterBenchCommand(CLI::App& app) {
  CLI::App* bench = &BenchGroup(app);
  auto flags = std::make_shared<BenchScheduleFlags>();
  auto& o = flags->options;
  auto* cmd = bench->add_subcommand(
      "schedule", "Scheduler speed on one core: single-GPU placements/s and a large gang's time");
  cmd->add_option("--nodes", o.nodes, "nodes")->capture_default_str();
  cmd->add_option("--gpus-per-node", o.gpus_per_node, "GPUs per node")->capture_default_str();
  cmd->add_option("--nodes-per-leaf", o.nodes_per_leaf, "nodes per leaf switch")
      ->capture_default_str();
  cmd->add_option("--leaves-per-spine", o.leaves_per_spine, "leaves per spine")
      ->capture_default_str();
  cmd->add_option("--pending", o.pending, "pending single-GPU jobs")->capture_default_str();
  cmd->add_option("--gang-gpus", o.gang_gpus, "GPUs of the gang (require spine, prefer leaf)")
      ->capture_default_str();
  cmd->add_option("--gang-background", o.gang_background,
                  "share of GPUs busy when the gang arrives")
      ->capture_default_str();
  cmd->add_option("--repeats", o.repeats, "runs per figure (the median is reported)")
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "seed")->capture_default_str();
  cmd->add_option("--policy", o.policy, "placement policy (bestfit, fgd, ...)")
      ->capture_default_str();
  cmd->add_option("--out", flags->out, "write the JSON here");
  cmd->callback([flags] { SetExitCode(RunBenchSchedule(*flags)); });

  auto topo = std::make_shared<BenchTopologyFlags>();
  auto* t = bench->add_subcommand(
      "topology", "Topology-aware vs greedy gang placement on one trace, in the simulator");
  t->add_option("--trace", topo->trace, "trace file (e.g. from tessera gen)");
  t->add_option("--cluster", topo->cluster,
                "cluster spec (e.g. examples/config/clusters/llm-10k.yaml)");
  t->add_option("--policy", topo->options.queue_policy, "queue policy")->capture_default_str();
  t->add_option("--placement", topo->options.placement_policy, "placement policy")
      ->capture_default_str();
  t->add_option("--seed", topo->options.seed, "seed")->capture_default_str();
  t->add_option("--max-attempts", topo->options.max_attempts_after_block,
                "pending jobs tried per cycle once the head is blocked (0 = all)")
      ->capture_default_str();
  t->add_option("--backfill-reservation", topo->options.backfill_reservation,
                "domain | gpu-count (docs/backfill.md; §3 of docs/results.md used gpu-count)")
      ->capture_default_str();
  t->add_option("--out", topo->out, "write the JSON here");
  t->callback([topo] { SetExitCode(RunBenchTopology(*topo)); });

  auto pol = std::make_shared<BenchPoliciesFlags>();
  auto* b = bench->add_subcommand(
      "policies",
      "Backfill reservations, elastic resizing, GPU-model choice vs baselines on one trace");
  b->add_option("--trace", pol->trace, "trace file (e.g. from tessera gen)");
  b->add_option("--cluster", pol->cluster,
                "cluster spec (e.g. examples/config/clusters/llm-10k.yaml)");
  b->add_option("--variants", pol->variants,
                "comma-separated: fifo, easy, domain, srtf, ... with +elastic, +blind, +greedy")
      ->delimiter(',')
      ->capture_default_str();
  b->add_option("--placement", pol->options.placement_policy, "placement policy")
      ->capture_default_str();
  b->add_option("--elastic-min", pol->elastic_min,
                "make multi-node jobs elastic down to this share of their workers (0 = none)")
      ->capture_default_str();
  b->add_option("--elastic-max", pol->elastic_max, "... and up to this multiple")
      ->capture_default_str();
  b->add_option("--elastic-scaling", pol->options.elastic_scaling,
                "progress rate (w/n)^this of an elastic job on w of n workers")
      ->capture_default_str();
  b->add_option("--gpu-speeds", pol->gpu_speeds,
                "relative speed per GPU model for every job, e.g. H100=1,A100=0.5,V100=0.25");
  b->add_option("--seed", pol->options.seed, "seed")->capture_default_str();
  b->add_option("--max-attempts", pol->options.max_attempts_after_block,
                "pending jobs tried per cycle once the head is blocked (0 = all)")
      ->capture_default_str();
  b->add_option("--out", pol->out, "write the JSON here");
  b->callback([pol] { SetExitCode(RunBenchPolicies(*pol)); });
}

}  // namespace tessera::cli

namespace tessera::cli {

CLI::App& BenchGroup(CLI::App& app) {
  for (auto* sub : app.get_subcommands([](CLI::App* s) { return s->get_name() == "bench"; }))
    return *sub;
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks");
  bench->require_subcommand(1);
  return *bench;
}

}  // namespace tessera::cli
