// Simulator benchmarks (Google Benchmark). Each measures Tessera against a baseline run side
// by side in the same process, so the ratio holds on any machine:
//  - EventQueue: the (time, seq) heap against std::multimap, the textbook alternative.
//  - Replay of ITP cluster04 (15,802 jobs, 64×8 GPUs) under each queue policy, with the
//    pre-sorted pending queue (what `tessera sim` does) against a snapshot that lists every
//    job unsorted each cycle (the naive way), and placing by the plain scan over every node
//    against the class index (SchedulerConfig::placement_index).
//  - One seed of the openb allocation experiment per placement policy, by the class index and by
//    the plain scan.
// Traces are read from ../shared/traces (run from the repository root); missing traces skip.
#include <benchmark/benchmark.h>

#include <map>

#include "core/rng.h"
#include "sim/allocation_experiment.h"
#include "sim/cluster_spec.h"
#include "sim/event_queue.h"
#include "sim/replay_simulation.h"
#include "sim/trace/trace_reader.h"
#include "sim/workload_builder.h"

namespace tessera {
namespace {

void BM_EventQueue(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    EventQueue<std::uint32_t> q;
    Rng rng(1);
    for (std::size_t i = 0; i < n; ++i)
      q.Push(static_cast<Tick>(rng.Uniform(1'000'000)), static_cast<std::uint32_t>(i));
    std::uint64_t sum = 0;
    while (!q.empty()) sum += q.Pop().payload;
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}
BENCHMARK(BM_EventQueue)->Arg(100'000);

void BM_EventQueueBaselineMultimap(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    std::multimap<std::pair<Tick, std::uint64_t>, std::uint32_t> q;
    Rng rng(1);
    for (std::size_t i = 0; i < n; ++i)
      q.emplace(std::make_pair(static_cast<Tick>(rng.Uniform(1'000'000)), i),
                static_cast<std::uint32_t>(i));
    std::uint64_t sum = 0;
    while (!q.empty()) {
      sum += q.begin()->second;
      q.erase(q.begin());
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}
BENCHMARK(BM_EventQueueBaselineMultimap)->Arg(100'000);

struct ItpInput {
  Cluster cluster;
  std::vector<Workload> jobs;
  bool ok = false;
};

const ItpInput& Itp() {
  static const ItpInput input = [] {
    ItpInput in;
    auto cluster = LoadCluster("64x8");
    auto trace = ReadTrace("../shared/traces/microsoft-itp-2021/cluster04.csv");
    if (!cluster || !trace) return in;
    in.cluster = std::move(*cluster);
    for (std::size_t i = 0; i < trace->jobs.size(); ++i) {
      in.jobs.push_back(
          ToWorkload(trace->jobs[i], in.cluster, JobId(static_cast<std::uint32_t>(i))));
    }
    in.ok = true;
    return in;
  }();
  return input;
}

const char* kQueuePolicies[] = {"fifo", "backfill", "srtf", "srsf", "las"};

void BM_ReplayItpCluster04(benchmark::State& state) {
  const auto& in = Itp();
  if (!in.ok) {
    state.SkipWithError("../shared/traces/microsoft-itp-2021/cluster04.csv not found");
    return;
  }
  ReplayOptions o;
  o.scheduler.queue_policy = kQueuePolicies[state.range(0)];
  o.presorted_queue = state.range(1) != 0;
  o.scheduler.placement_index = state.range(2) != 0;
  std::int64_t events = 0;
  for (auto _ : state) {
    auto r = RunReplay(in.cluster, in.jobs, o);
    events += r->event_count;
    benchmark::DoNotOptimize(r);
  }
  state.SetLabel(o.scheduler.queue_policy +
                 (o.presorted_queue ? "" : " baseline: unsorted snapshot") +
                 (o.scheduler.placement_index ? "" : " baseline: plain scan"));
  state.counters["events_per_second"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ReplayItpCluster04)
    ->ArgsProduct({{0, 1, 2, 3, 4}, {1, 0}, {1, 0}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

struct OpenbInput {
  Cluster cluster;
  std::vector<TraceJob> pods;
  bool ok = false;
};

const OpenbInput& Openb() {
  static const OpenbInput input = [] {
    OpenbInput in;
    auto cluster = LoadCluster("../shared/traces/alibaba-openb-2023/openb_node_list_gpu_node.csv");
    auto trace = ReadTrace("../shared/traces/alibaba-openb-2023/openb_pod_list_default.csv");
    if (!cluster || !trace) return in;
    in.cluster = std::move(*cluster);
    in.pods = std::move(trace->jobs);
    in.ok = true;
    return in;
  }();
  return input;
}

const char* kPlacementPolicies[] = {"random", "dotprod", "clustering", "packing", "bestfit", "fgd"};

void BM_AllocationOpenbOneSeed(benchmark::State& state) {
  const auto& in = Openb();
  if (!in.ok) {
    state.SkipWithError("openb trace not found");
    return;
  }
  const std::string policy = kPlacementPolicies[state.range(0)];
  AllocationOptions o;
  o.placement_index = state.range(1) != 0;
  std::int64_t pods = 0;
  for (auto _ : state) {
    auto r = RunAllocationOnce(in.cluster, in.pods, policy, 0, o);
    pods += r->pods_arrived;
    benchmark::DoNotOptimize(r);
  }
  state.SetLabel(policy + (o.placement_index ? "" : " baseline: plain scan"));
  state.counters["placements_per_second"] =
      benchmark::Counter(static_cast<double>(pods), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_AllocationOpenbOneSeed)
    ->ArgsProduct({{0, 1, 2, 3, 4, 5}, {1, 0}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
