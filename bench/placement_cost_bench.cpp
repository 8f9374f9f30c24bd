// Cost per placement of the fragmentation-aware placement policies (fgd, fgd-strand) on the
// openb cluster (1,213 nodes, 6,212 GPUs) and the default pod list (docs/beyond-fgd.md):
//  - BM_AllocationRun: one seed of the allocation experiment (10,866 pods placed or failed
//    through Scheduler::Schedule, with the score cache and the policy's memo warm as in the
//    simulator and in a long-running controller); `per_pod` is the mean time per arriving pod.
//  - BM_PlaceCold: one placement on a cluster filled to 80% of its GPUs (by fgd, so that both
//    policies face the same state), with a fresh policy object and no score cache: every
//    feasible node is scored from scratch, the worst case (a controller just restarted).
// Traces are read from $TESSERA_TRACES or ../shared/traces (run from the repository root);
// missing traces skip.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "core/cluster_state.h"
#include "sched/placement/task_placer.h"
#include "sim/allocation_experiment.h"
#include "sim/cluster_spec.h"
#include "sim/trace/trace_reader.h"
#include "sim/workload_builder.h"

namespace tessera {
namespace {

struct OpenbInput {
  Cluster cluster;
  std::vector<TraceJob> pods;
  std::vector<Workload> workloads;
  PlacementConfig config;  // the target workload as the allocation experiment builds it
  bool ok = false;
};

const OpenbInput& Openb() {
  static const OpenbInput input = [] {
    OpenbInput in;
    const char* env = std::getenv("TESSERA_TRACES");
    const std::string dir =
        std::string(env != nullptr ? env : "../shared/traces") + "/alibaba-openb-2023/";
    auto cluster = LoadCluster(dir + "openb_node_list_gpu_node.csv");
    auto trace = ReadTrace(dir + "openb_pod_list_default.csv");
    if (!cluster || !trace) return in;
    in.cluster = std::move(*cluster);
    in.pods = std::move(trace->jobs);
    std::vector<WorkloadShape> shapes, with_memory;
    for (std::size_t i = 0; i < in.pods.size(); ++i) {
      const auto& p = in.pods[i];
      in.workloads.push_back(ToWorkload(p, in.cluster, JobId(static_cast<std::uint32_t>(i))));
      const GpuModelSet models = in.cluster.models().Resolve(p.gpu_models);
      const std::int32_t milli = p.gpus > 0 ? p.gpu_milli : 0;
      shapes.push_back(WorkloadShape{TaskShape{p.cpu_milli, 0, p.gpus, milli}, models, 1});
      with_memory.push_back(
          WorkloadShape{TaskShape{p.cpu_milli, p.memory_mib, p.gpus, milli}, models, 1});
    }
    in.config.target_workload = TargetWorkload::FromTasks(shapes, 1.0);
    // fgd-strand's mix carries memory, as the allocation experiment gives it.
    in.config.workload_mix = TargetWorkload::FromTasks(with_memory, 1.0);
    in.ok = true;
    return in;
  }();
  return input;
}

void BM_AllocationRun(benchmark::State& state, const char* policy) {
  const auto& in = Openb();
  if (!in.ok) {
    state.SkipWithError("openb traces not found (set TESSERA_TRACES)");
    return;
  }
  AllocationOptions options;
  std::int64_t pods = 0;
  for (auto _ : state) {
    auto run = RunAllocationOnce(in.cluster, in.pods, policy, 0, options);
    if (!run) {
      state.SkipWithError(run.error().message.c_str());
      return;
    }
    pods = run->pods_arrived;
    benchmark::DoNotOptimize(run->allocation);
  }
  state.counters["pods"] = static_cast<double>(pods);
  state.counters["per_pod"] =
      benchmark::Counter(static_cast<double>(pods), benchmark::Counter::kIsIterationInvariantRate |
                                                        benchmark::Counter::kInvert);
}
BENCHMARK_CAPTURE(BM_AllocationRun, fgd, "fgd")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AllocationRun, fgd_strand, "fgd-strand")->Unit(benchmark::kMillisecond);

void BM_PlaceCold(benchmark::State& state, const char* policy) {
  const auto& in = Openb();
  if (!in.ok) {
    state.SkipWithError("openb traces not found (set TESSERA_TRACES)");
    return;
  }
  // Fill the cluster to 80% of its GPUs with fgd (seed 0 arrival order): the same state for
  // every policy measured.
  auto warm = MakePlacementPolicy("fgd", in.config);
  if (!warm) {
    state.SkipWithError(warm.error().message.c_str());
    return;
  }
  ScoreCache cache;
  TaskPlacer filler(**warm, &cache);
  ClusterState cluster_state(in.cluster);
  const auto order = AllocationArrivalOrder(in.pods, in.cluster, 0, 1.3);
  const auto target = in.cluster.total_gpus() * kMilliPerGpu * 8 / 10;
  std::size_t next = 0;
  Rng fill_rng(1);
  while (next < order.size() && cluster_state.allocated_gpu_milli() < target) {
    filler.PlaceGang(cluster_state, in.workloads[order[next++]], fill_rng);
  }
  // Then time single placements of the next pods (not applied), each with a fresh policy.
  std::size_t i = 0;
  Rng rng(2);
  for (auto _ : state) {
    state.PauseTiming();
    auto fresh = MakePlacementPolicy(policy, in.config);
    TaskPlacer placer(**fresh, nullptr);
    const Workload& w = in.workloads[order[next + i++ % 64]];
    state.ResumeTiming();
    auto t = placer.Place(cluster_state, w.groups[0].shape, w.allowed_models, rng);
    benchmark::DoNotOptimize(t);
  }
}
BENCHMARK_CAPTURE(BM_PlaceCold, fgd, "fgd")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PlaceCold, fgd_strand, "fgd-strand")->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
