#include "sim/allocation_experiment.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <numeric>
#include <thread>

#include "core/cluster_state.h"
#include "core/rng.h"
#include "sched/placement/fragmentation.h"
#include "sched/scheduler.h"
#include "sim/workload_builder.h"

namespace tessera {

namespace {

std::int64_t GpuRequest(const TraceJob& p) { return std::int64_t{p.gpus} * p.gpu_milli; }

// The pods' shapes, most frequent first, kept until they cover `coverage` of the pods. FGD's
// target counts CPU, GPU count, per-GPU milli and models; `with_memory` adds each pod's memory
// (fgd-strand's mix: memory strands GPUs as CPU does; FGD's measure ignores memory).
TargetWorkload TargetOf(const std::vector<TraceJob>& pods, const Cluster& cluster, double coverage,
                        bool with_memory) {
  std::vector<WorkloadShape> shapes;
  shapes.reserve(pods.size());
  for (const auto& p : pods) {
    WorkloadShape s;
    s.shape = TaskShape{p.cpu_milli, with_memory ? p.memory_mib : 0, p.gpus,
                        p.gpus > 0 ? p.gpu_milli : 0};
    s.models = cluster.models().Resolve(p.gpu_models);
    s.count = 1;
    shapes.push_back(s);
  }
  return TargetWorkload::FromTasks(shapes, coverage);
}

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

std::vector<std::size_t> AllocationArrivalOrder(const std::vector<TraceJob>& pods,
                                                const Cluster& cluster, std::uint64_t seed,
                                                double tune_ratio) {
  // 1. Sort by name, 2. shuffle with the seed (Fisher–Yates), 3. draw copies with
  //    replacement until the next copy would take the total request above the target.
  std::vector<std::size_t> order(pods.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return pods[a].id < pods[b].id; });
  Rng rng(seed);
  for (std::size_t i = order.size(); i > 1; --i) {
    std::swap(order[i - 1], order[rng.Uniform(i)]);
  }
  const auto capacity = static_cast<double>(cluster.total_gpus() * kMilliPerGpu);
  const double target = tune_ratio * capacity;
  double total = 0;
  for (auto i : order) total += static_cast<double>(GpuRequest(pods[i]));
  if (pods.empty()) return order;
  while (true) {
    const std::size_t pick = order[rng.Uniform(pods.size())];
    const double next = total + static_cast<double>(GpuRequest(pods[pick]));
    if (next > target) break;
    order.push_back(pick);
    total = next;
  }
  return order;
}

std::vector<std::uint32_t> AllocationNodeTieRank(const Cluster& cluster, std::uint64_t seed) {
  const auto& nodes = cluster.nodes();
  std::vector<std::uint32_t> by_name(nodes.size());
  std::iota(by_name.begin(), by_name.end(), std::uint32_t{0});
  std::stable_sort(by_name.begin(), by_name.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return nodes[a].name < nodes[b].name; });
  std::vector<std::uint32_t> perm(nodes.size());
  std::iota(perm.begin(), perm.end(), std::uint32_t{0});
  Rng rng(Rng::Mix(seed, 0x6e6f6465));  // a stream of its own ("node")
  for (std::size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[rng.Uniform(i)]);
  std::vector<std::uint32_t> rank(nodes.size());
  for (std::size_t i = 0; i < by_name.size(); ++i) rank[by_name[i]] = perm[i];
  return rank;
}

Result<AllocationRun> RunAllocationOnce(const Cluster& cluster, const std::vector<TraceJob>& pods,
                                        const std::string& policy, std::uint64_t seed,
                                        const AllocationOptions& options) {
  const double start = Now();
  SchedulerConfig config;
  config.queue_policy = "fifo";
  config.placement_policy = policy;
  const TargetWorkload target = TargetOf(pods, cluster, options.target_coverage, false);
  config.placement.target_workload = target;
  config.placement.workload_mix = TargetOf(pods, cluster, 1.0, /*with_memory=*/true);
  config.placement.exact_scores = options.exact_scores;
  config.placement.tie_break = options.tie_break;
  config.placement.draw_seed = seed;
  config.placement_index = options.placement_index;
  if (options.tie_break == TieBreak::kNodeOrder) {
    config.placement.node_rank = AllocationNodeTieRank(cluster, seed);
  }
  auto scheduler = Scheduler::Create(config);
  if (!scheduler) return std::unexpected(scheduler.error());

  // Workloads are built once per distinct pod; copies share them.
  std::vector<Workload> workloads;
  workloads.reserve(pods.size());
  for (std::size_t i = 0; i < pods.size(); ++i) {
    workloads.push_back(ToWorkload(pods[i], cluster, JobId(static_cast<std::uint32_t>(i))));
  }

  ClusterState state(cluster);
  const auto capacity = static_cast<double>(cluster.total_gpus() * kMilliPerGpu);
  // Fragmentation is tracked incrementally: only the node that changed is recomputed.
  std::vector<std::int64_t> node_frag(cluster.nodes().size());
  std::int64_t frag_scaled = 0;
  for (const auto& n : cluster.nodes()) {
    node_frag[n.id.value] = ScaledNodeFragment(n, state.node(n.id), target);
    frag_scaled += node_frag[n.id.value];
  }
  const double frag_scale = target.total > 0 ? static_cast<double>(target.total) : 1.0;

  std::vector<double> alloc_sum(kDemandBins), frag_sum(kDemandBins), frag_free_sum(kDemandBins);
  std::vector<int> count(kDemandBins);
  AllocationRun run;
  run.policy = policy;
  run.seed = static_cast<int>(seed - options.base_seed);

  const auto order = AllocationArrivalOrder(pods, cluster, seed, options.tune_ratio);
  double arrived = 0;
  Snapshot snap;
  snap.jobs.resize(1);
  std::uint64_t cycle = 0;
  for (std::size_t idx : order) {
    const Workload& w = workloads[idx];
    arrived += static_cast<double>(GpuRequest(pods[idx]));
    ++run.pods_arrived;
    snap.jobs[0] = JobView{&w, JobPhase::kPending, {}, 0, 0, 0, 0};
    snap.now = static_cast<Tick>(cycle);
    snap.seed = Rng::Mix(seed, ++cycle);
    const Decisions decisions = scheduler->Schedule(snap, state);
    bool placed = false;
    for (const auto& d : decisions) {
      if (d.kind != Decision::Kind::kBind) continue;
      placed = true;
      for (const auto& t : d.placement) {
        const auto& n = cluster.node(t.node);
        const std::int64_t f = ScaledNodeFragment(n, state.node(t.node), target);
        frag_scaled += f - node_frag[t.node.value];
        node_frag[t.node.value] = f;
      }
    }
    if (!placed) ++run.pods_failed;
    const auto bin = static_cast<long>(std::lround(100.0 * arrived / capacity));
    if (bin < 0 || bin >= kDemandBins) continue;
    const double frag = static_cast<double>(frag_scaled) / frag_scale;
    const auto free = static_cast<double>(state.free_gpu_milli());
    alloc_sum[bin] += static_cast<double>(state.allocated_gpu_milli()) / capacity;
    frag_sum[bin] += frag / capacity;
    frag_free_sum[bin] += free > 0 ? frag / free : 0.0;
    ++count[bin];
  }
  run.allocation.resize(kDemandBins);
  run.fragmentation.resize(kDemandBins);
  run.fragmentation_of_free.resize(kDemandBins);
  for (int b = 0; b < kDemandBins; ++b) {
    if (count[b] == 0) continue;
    run.allocation[b] = alloc_sum[b] / count[b];
    run.fragmentation[b] = frag_sum[b] / count[b];
    run.fragmentation_of_free[b] = frag_free_sum[b] / count[b];
  }
  run.wall_seconds = Now() - start;
  return run;
}

Result<std::vector<AllocationPolicyResult>> RunAllocationExperiment(
    const Cluster& cluster, const std::vector<TraceJob>& pods, const AllocationOptions& options,
    const std::function<void(int, int, const AllocationRun&)>& progress) {
  if (options.seeds < 1) return InvalidArgument("--seeds: must be at least 1");
  if (pods.empty()) return InvalidArgument("trace: has no pods");
  for (const auto& p : options.policies) {
    if (auto made = MakePlacementPolicy(p, {}); !made) return std::unexpected(made.error());
  }
  const int total = static_cast<int>(options.policies.size()) * options.seeds;
  std::vector<Result<AllocationRun>> runs(static_cast<std::size_t>(total),
                                          Internal("run did not happen"));
  std::atomic<int> next{0};
  int done = 0;
  std::mutex mu;
  auto worker = [&] {
    for (int i = next++; i < total; i = next++) {
      const auto& policy = options.policies[static_cast<std::size_t>(i / options.seeds)];
      const auto seed = options.base_seed + static_cast<std::uint64_t>(i % options.seeds);
      auto r = RunAllocationOnce(cluster, pods, policy, seed, options);
      std::lock_guard lock(mu);
      ++done;
      if (r && progress) progress(done, total, *r);
      runs[static_cast<std::size_t>(i)] = std::move(r);
    }
  };
  int threads = options.threads > 0
                    ? options.threads
                    : static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  threads = std::min(threads, total);
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();

  std::vector<AllocationPolicyResult> results;
  for (std::size_t p = 0; p < options.policies.size(); ++p) {
    AllocationPolicyResult r;
    r.policy = options.policies[p];
    r.seeds = options.seeds;
    r.allocation_mean.resize(kDemandBins);
    r.allocation_min.resize(kDemandBins);
    r.allocation_max.resize(kDemandBins);
    r.fragmentation_mean.resize(kDemandBins);
    r.fragmentation_of_free_mean.resize(kDemandBins);
    std::vector<double> a(kDemandBins), f(kDemandBins), ff(kDemandBins);
    std::vector<int> n(kDemandBins);
    for (int s = 0; s < options.seeds; ++s) {
      auto& run = runs[p * static_cast<std::size_t>(options.seeds) + static_cast<std::size_t>(s)];
      if (!run) return std::unexpected(run.error());
      r.pods_arrived_mean += static_cast<double>(run->pods_arrived) / options.seeds;
      r.pods_failed_mean += static_cast<double>(run->pods_failed) / options.seeds;
      r.wall_seconds += run->wall_seconds;
      for (int b = 0; b < kDemandBins; ++b) {
        if (!run->allocation[b]) continue;
        const double v = *run->allocation[b];
        a[b] += v;
        f[b] += *run->fragmentation[b];
        ff[b] += *run->fragmentation_of_free[b];
        ++n[b];
        r.allocation_min[b] = r.allocation_min[b] ? std::min(*r.allocation_min[b], v) : v;
        r.allocation_max[b] = r.allocation_max[b] ? std::max(*r.allocation_max[b], v) : v;
      }
    }
    for (int b = 0; b < kDemandBins; ++b) {
      if (n[b] == 0) continue;
      r.allocation_mean[b] = a[b] / n[b];
      r.fragmentation_mean[b] = f[b] / n[b];
      r.fragmentation_of_free_mean[b] = ff[b] / n[b];
    }
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace tessera
