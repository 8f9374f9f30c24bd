// Scheduler benchmarks at the 10,000-GPU scale (Google Benchmark), each beside its baseline:
//  - Single-GPU placements: one Scheduler::Schedule call over 100,000 pending single-GPU jobs on
//    the empty llm-10k cluster (1,250 nodes × 8 GPUs, leaves of 32 nodes, spines of 8 leaves);
//    it places 10,000 jobs. Baseline: the same call by the plain scan over every node, without
//    the class index (same decisions).
//  - A 1,024-GPU gang (require spine, prefer leaf) on the cluster 40% busy. Baseline: "greedy"
//    gang placement, task by task.
// items_per_second is placements per second. `tessera bench schedule` reports the same figures
// as JSON (src/sim/schedule_benchmark.h).
#include <benchmark/benchmark.h>

#include "core/cluster_state.h"
#include "core/rng.h"
#include "sched/scheduler.h"
#include "sim/schedule_benchmark.h"

namespace tessera {
namespace {

struct Input {
  Cluster cluster;
  std::vector<Workload> jobs;
  std::vector<JobView> views;
  std::vector<const JobView*> queue;
  Workload gang;
  std::unique_ptr<ClusterState> loaded;
};

const Input& GetInput() {
  static const Input* const input = [] {
    auto* in = new Input;
    in->cluster = *BuildLeafSpineCluster(1250, 8, 32, 8);
    in->jobs.resize(100'000);
    in->views.resize(in->jobs.size());
    for (std::size_t i = 0; i < in->jobs.size(); ++i) {
      auto& w = in->jobs[i];
      w.id = JobId(static_cast<std::uint32_t>(i));
      w.submit = static_cast<Tick>(i);
      w.groups.push_back({"worker", 1, TaskShape{4000, 16 * 1024, 1, 1000}});
      in->views[i].job = &w;
      in->queue.push_back(&in->views[i]);
    }
    in->gang.id = JobId(static_cast<std::uint32_t>(in->jobs.size()));
    in->gang.groups.push_back({"worker", 128, TaskShape{32000, 128 * 1024, 8, 1000}});
    in->gang.topology = {"spine", "leaf"};
    in->loaded = std::make_unique<ClusterState>(in->cluster);
    std::vector<const JobView*> background(in->queue.begin(), in->queue.begin() + 4000);
    SchedulerConfig c;
    Snapshot snap;
    snap.seed = 0xB6;
    snap.pending_in_order = &background;
    Scheduler::Create(c)->Schedule(snap, *in->loaded);
    return in;
  }();
  return *input;
}

void SinglePlacements(benchmark::State& state, bool index) {
  const Input& in = GetInput();
  SchedulerConfig c;
  c.placement_index = index;
  auto sched = Scheduler::Create(c);
  std::int64_t placed = 0;
  std::uint64_t rep = 0;
  for (auto _ : state) {
    state.PauseTiming();
    ClusterState s(in.cluster);
    Snapshot snap;
    snap.seed = Rng::Mix(1, ++rep);
    snap.pending_in_order = &in.queue;
    state.ResumeTiming();
    placed += static_cast<std::int64_t>(sched->Schedule(snap, s).size());
  }
  state.SetItemsProcessed(placed);
}
void BM_ScheduleSingleGpu(benchmark::State& state) { SinglePlacements(state, true); }
void BM_ScheduleSingleGpuBaselineScan(benchmark::State& state) { SinglePlacements(state, false); }
BENCHMARK(BM_ScheduleSingleGpu)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ScheduleSingleGpuBaselineScan)->Unit(benchmark::kMillisecond);

void Gang(benchmark::State& state, const char* gangs) {
  const Input& in = GetInput();
  SchedulerConfig c;
  c.gang_placement = gangs;
  auto sched = Scheduler::Create(c);
  JobView v;
  v.job = &in.gang;
  std::uint64_t rep = 0;
  for (auto _ : state) {
    state.PauseTiming();
    ClusterState s = *in.loaded;
    Snapshot snap;
    snap.seed = Rng::Mix(2, ++rep);
    snap.jobs = {v};
    state.ResumeTiming();
    auto d = sched->Schedule(snap, s);
    if (d.size() != 1) state.SkipWithError("gang not placed");
  }
}
void BM_Gang1024Topology(benchmark::State& state) { Gang(state, "topology"); }
void BM_Gang1024BaselineGreedy(benchmark::State& state) { Gang(state, "greedy"); }
BENCHMARK(BM_Gang1024Topology)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Gang1024BaselineGreedy)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
