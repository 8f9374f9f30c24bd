// The scheduling benchmark at 10,000 GPUs: builds the cluster and the queue, times
// Scheduler::Schedule with its baselines, and reports medians. See schedule_benchmark.h.
#include "sim/schedule_benchmark.h"

#include <fmt/core.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <thread>

#include "core/cluster_state.h"
#include "core/rng.h"
#include "sched/placement/topology_gang_placer.h"
#include "sched/scheduler.h"
#include "sim/cluster_spec.h"

namespace tessera {

namespace {

TaskShape SingleGpuShape() { return TaskShape{4000, 16 * 1024, 1, 1000}; }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double ThreadCpuMs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

// Wall milliseconds of f(); its CPU milliseconds (this thread) into *cpu_ms when given: on a
// loaded machine the wall time includes waiting for a core.
template <typename F>
double TimeMs(F&& f, double* cpu_ms = nullptr) {
  const double cpu0 = ThreadCpuMs();
  const auto t0 = std::chrono::steady_clock::now();
  f();
  const auto t1 = std::chrono::steady_clock::now();
  if (cpu_ms != nullptr) *cpu_ms = ThreadCpuMs() - cpu0;
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

// `index` off: the plain scan over every node.
Result<Scheduler> MakeScheduler(const ScheduleBenchOptions& o, const std::string& gangs, bool index,
                                const std::string& policy) {
  SchedulerConfig c;
  c.queue_policy = "fifo";
  c.placement_policy = policy;
  c.gang_placement = gangs;
  c.placement_index = index;
  // fgd's expected task shapes: the queue's single-GPU jobs.
  c.placement.target_workload = TargetWorkload::FromTasks(
      {WorkloadShape{SingleGpuShape(), GpuModelSet::Any(), o.pending}}, 0.95);
  return Scheduler::Create(c);
}

int LeavesSpanned(const Cluster& cluster, const Placement& p) {
  const int leaf = cluster.topology().LevelIndex("leaf");
  if (leaf < 0) return 0;
  std::set<std::uint32_t> leaves;
  for (const auto& t : p)
    leaves.insert(cluster.node(t.node).domain[static_cast<std::size_t>(leaf)]);
  return static_cast<int>(leaves.size());
}

}  // namespace

Result<Cluster> BuildLeafSpineCluster(int nodes, int gpus_per_node, int nodes_per_leaf,
                                      int leaves_per_spine) {
  // Per node as in examples/config/clusters/llm-10k.yaml: 14 cores and 256 GiB per GPU.
  const std::string yaml = fmt::format(
      "topology: {{levels: [spine, leaf]}}\n"
      "pools:\n"
      "  - {{name: h100, count: {}, gpus: {}, model: H100, cpuCores: {}, memoryGiB: {},\n"
      "     fanout: {{spine: {}, leaf: {}}}}}\n",
      nodes, gpus_per_node, 14 * std::max(1, gpus_per_node), 256 * std::max(1, gpus_per_node),
      leaves_per_spine, nodes_per_leaf);
  return ParseClusterYaml(yaml, "<bench cluster>");
}

Result<ScheduleBenchResult> RunScheduleBench(const ScheduleBenchOptions& o) {
  if (o.pending < 1) return InvalidArgument("--pending: must be at least 1");
  if (o.repeats < 1) return InvalidArgument("--repeats: must be at least 1");
  if (o.gpus_per_node < 1 || o.gang_gpus % o.gpus_per_node != 0) {
    return InvalidArgument("--gang-gpus: must be a multiple of --gpus-per-node");
  }
  if (!(o.gang_background >= 0 && o.gang_background < 1)) {
    return InvalidArgument("--gang-background: must be in [0, 1)");
  }
  auto cluster =
      BuildLeafSpineCluster(o.nodes, o.gpus_per_node, o.nodes_per_leaf, o.leaves_per_spine);
  if (!cluster) return std::unexpected(cluster.error());
  if (o.gang_gpus > cluster->total_gpus()) {
    return InvalidArgument("--gang-gpus: " + std::to_string(o.gang_gpus) +
                           " is more than the cluster's " + std::to_string(cluster->total_gpus()));
  }

  // The queue: single-GPU jobs, FIFO order (submit time = index), as the simulator keeps it.
  std::vector<Workload> jobs(static_cast<std::size_t>(o.pending));
  std::vector<JobView> views(jobs.size());
  std::vector<const JobView*> queue(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    Workload& w = jobs[i];
    w.id = JobId(static_cast<std::uint32_t>(i));
    w.name = "single-" + std::to_string(i);
    w.submit = static_cast<Tick>(i);
    w.duration = kHour;
    w.groups.push_back({"worker", 1, SingleGpuShape()});
    views[i].job = &w;
    views[i].remaining = w.duration;
    queue[i] = &views[i];
  }

  ScheduleBenchResult r;
  auto fast = MakeScheduler(o, "topology", true, o.policy);
  if (!fast) return std::unexpected(fast.error());
  auto slow = MakeScheduler(o, "topology", false, o.policy);
  auto greedy = MakeScheduler(o, "greedy", true, o.policy);
  auto background_placer = MakeScheduler(o, "topology", true, "bestfit");
  if (!slow || !greedy || !background_placer) {
    return Internal("bench: cannot create the scheduler");
  }

  // 1. Single-GPU placements through one Schedule call each, on a fresh empty cluster.
  std::vector<double> fast_ms, slow_ms, fast_cpu, slow_cpu;
  Decisions first_fast, first_slow;
  for (int rep = 0; rep < o.repeats; ++rep) {
    Snapshot snap;
    snap.seed = Rng::Mix(o.seed, static_cast<std::uint64_t>(rep));
    snap.pending_in_order = &queue;
    auto run = [&](const Scheduler& sched, std::vector<double>& times, std::vector<double>& cpu,
                   Decisions& keep) {
      ClusterState state(*cluster);
      Decisions d;
      double cpu_ms = 0;
      times.push_back(TimeMs([&] { d = sched.Schedule(snap, state); }, &cpu_ms));
      cpu.push_back(cpu_ms);
      if (rep == 0) keep = std::move(d);
    };
    run(*fast, fast_ms, fast_cpu, first_fast);
    run(*slow, slow_ms, slow_cpu, first_slow);
  }
  r.placements = static_cast<std::int64_t>(first_fast.size());
  r.schedule_ms = Median(fast_ms);
  r.schedule_cpu_ms = Median(fast_cpu);
  r.baseline_schedule_ms = Median(slow_ms);
  r.baseline_schedule_cpu_ms = Median(slow_cpu);
  r.placements_per_second = r.placements / (r.schedule_ms / 1000);
  r.baseline_placements_per_second =
      static_cast<double>(first_slow.size()) / (r.baseline_schedule_ms / 1000);
  r.baseline_same_decisions = first_fast.size() == first_slow.size();
  for (std::size_t i = 0; r.baseline_same_decisions && i < first_fast.size(); ++i) {
    r.baseline_same_decisions = first_fast[i].job == first_slow[i].job &&
                                first_fast[i].placement == first_slow[i].placement;
  }

  // 2. The gang: require spine, prefer leaf, whole-node workers; ranked behind nothing.
  Workload gang;
  gang.id = JobId(static_cast<std::uint32_t>(jobs.size()));
  gang.name = "gang";
  gang.duration = kDay;
  gang.groups.push_back(
      {"worker", o.gang_gpus / o.gpus_per_node,
       TaskShape{4000 * o.gpus_per_node, 16 * 1024 * o.gpus_per_node, o.gpus_per_node, 1000}});
  gang.topology = {"spine", "leaf"};
  JobView gang_view;
  gang_view.job = &gang;
  gang_view.remaining = gang.duration;

  // The background: the first jobs of the queue, placed by bestfit whatever --policy says
  // (nodes filled one by one, empty nodes chosen by the seeded draw, so busy nodes are
  // scattered over every leaf). fgd would spread them over every node (single-GPU jobs change
  // no node's fragmentation, so every feasible node ties), and no whole node would be left.
  ClusterState loaded(*cluster);
  {
    const auto background = static_cast<std::size_t>(
        std::min<double>(static_cast<double>(queue.size()),
                         o.gang_background * static_cast<double>(cluster->total_gpus())));
    std::vector<const JobView*> some(queue.begin(), queue.begin() + static_cast<long>(background));
    Snapshot snap;
    snap.seed = Rng::Mix(o.seed, 0xB6);
    snap.pending_in_order = &some;
    background_placer->Schedule(snap, loaded);
  }
  std::vector<double> gang_ms, empty_ms, scan_ms, greedy_ms;
  for (int rep = 0; rep < o.repeats; ++rep) {
    Snapshot snap;
    snap.seed = Rng::Mix(o.seed, 1000 + static_cast<std::uint64_t>(rep));
    snap.jobs = {gang_view};
    Decisions d, e, g;
    {
      ClusterState state = loaded;
      gang_ms.push_back(TimeMs([&] { d = fast->Schedule(snap, state); }));
    }
    {
      ClusterState state(*cluster);
      empty_ms.push_back(TimeMs([&] { e = fast->Schedule(snap, state); }));
    }
    {
      ClusterState state = loaded;
      Decisions by_scan;
      scan_ms.push_back(TimeMs([&] { by_scan = slow->Schedule(snap, state); }));
      // (A gang the index did not place is reported below.)
      if (d.size() == 1 && (by_scan.size() != 1 || by_scan[0].placement != d[0].placement)) {
        return Internal("bench: the plain scan placed the gang elsewhere");
      }
    }
    {
      ClusterState state = loaded;
      greedy_ms.push_back(TimeMs([&] { g = greedy->Schedule(snap, state); }));
    }
    if (d.size() != 1 || g.size() != 1 || e.size() != 1) {
      return Internal("bench: the gang was not placed; lower --gang-background");
    }
    if (rep == 0) {
      const Topology& t = cluster->topology();
      r.gang_span = LevelName(t, SpanLevel(*cluster, d[0].placement));
      r.gang_baseline_span = LevelName(t, SpanLevel(*cluster, g[0].placement));
      r.gang_leaves = LeavesSpanned(*cluster, d[0].placement);
      r.gang_baseline_leaves = LeavesSpanned(*cluster, g[0].placement);
      // Where the placer put it, for the record (the same call outside the scheduler).
      ClusterState state = loaded;
      const TopologyTree tree = TopologyTree::Build(*cluster);
      auto policy = MakePlacementPolicy(o.policy, {});
      TopologyGangPlacer placer(**policy, tree);
      Rng rng(snap.seed);
      GangPlacementInfo info;
      placer.Place(state, gang, rng, &info);
      r.gang_level = LevelName(t, info.level);
    }
  }
  r.gang_ms = Median(gang_ms);
  r.gang_empty_ms = Median(empty_ms);
  r.gang_scan_ms = Median(scan_ms);
  r.gang_baseline_ms = Median(greedy_ms);
  return r;
}

std::string MachineDescription() {
  std::string model;
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; model.empty() && std::getline(f, line);) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) model = line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  if (model.empty()) model = "unknown CPU";
  const unsigned cores = std::thread::hardware_concurrency();
  return fmt::format("{}, {} cores (the benchmark uses one)", model, cores);
}

nlohmann::json ScheduleBenchJson(const ScheduleBenchOptions& o, const ScheduleBenchResult& r) {
  nlohmann::json j;
  j["machine"] = MachineDescription();
  j["threads"] = 1;
  j["cluster"] = {{"nodes", o.nodes},
                  {"gpus_per_node", o.gpus_per_node},
                  {"gpus", static_cast<std::int64_t>(o.nodes) * o.gpus_per_node},
                  {"nodes_per_leaf", o.nodes_per_leaf},
                  {"leaves_per_spine", o.leaves_per_spine}};
  j["policy"] = o.policy;
  j["pending"] = o.pending;
  j["repeats"] = o.repeats;
  j["seed"] = o.seed;
  j["placements"] = r.placements;
  j["schedule_ms"] = r.schedule_ms;
  j["placements_per_second"] = r.placements_per_second;
  // CPU time of the same call (this thread): the wall time on a loaded machine includes
  // waiting for a core.
  j["schedule_cpu_ms"] = r.schedule_cpu_ms;
  j["placements_per_cpu_second"] = r.placements / (r.schedule_cpu_ms / 1000);
  j["gang_gpus"] = o.gang_gpus;
  j["gang_constraint"] = {{"require", "spine"}, {"prefer", "leaf"}};
  j["gang_background_busy"] = o.gang_background;
  j["gang_ms"] = r.gang_ms;
  if (o.gang_gpus == 1024) j["gang_1024_ms"] = r.gang_ms;
  j["gang_empty_cluster_ms"] = r.gang_empty_ms;
  j["gang_level"] = r.gang_level;
  j["gang_span"] = r.gang_span;
  j["gang_leaves"] = r.gang_leaves;
  // The plain scan over every node (SchedulerConfig::placement_index off), side by side.
  j["baseline_placements_per_second"] = r.baseline_placements_per_second;
  j["baseline_schedule_ms"] = r.baseline_schedule_ms;
  j["baseline_schedule_cpu_ms"] = r.baseline_schedule_cpu_ms;
  j["baseline_same_decisions"] = r.baseline_same_decisions;
  j["baseline_gang_ms"] = r.gang_scan_ms;
  if (o.gang_gpus == 1024) j["baseline_gang_1024_ms"] = r.gang_scan_ms;
  j["baseline"] = {
      {"placements", "the same Schedule calls by the plain scan over every node (same decisions)"},
      {"placements_per_second", r.baseline_placements_per_second},
      {"schedule_ms", r.baseline_schedule_ms},
      {"same_decisions", r.baseline_same_decisions},
      {"speedup", r.baseline_schedule_ms / r.schedule_ms},
      {"gang_ms", r.gang_scan_ms},
  };
  j["greedy_gang"] = {
      {"gang", "gang_placement greedy: task by task, each on the best node for the policy"},
      {"gang_ms", r.gang_baseline_ms},
      {"gang_span", r.gang_baseline_span},
      {"gang_leaves", r.gang_baseline_leaves},
      {"gang_speedup", r.gang_baseline_ms / r.gang_ms},
  };
  j["targets"] = {{"placements_per_second", 200000},
                  {"gang_ms", 1},
                  {"met", r.placements_per_second >= 200000 && r.gang_ms <= 1}};
  return j;
}

}  // namespace tessera
