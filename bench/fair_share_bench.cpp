// The drf cycle at the 10,000-GPU scale (Google Benchmark): llm-10k's 1,250 nodes × 8 GPUs
// (leaves of 32 nodes), 20 leaf queues guaranteed 5% each.
//  - Reclaim: queue q00 borrows the whole cluster with 10,000 one-GPU jobs of assorted
//    checkpoint ages; queue q01 waits with 16 jobs of 8 GPUs, each of which reclaims a node.
//    One Schedule call = 16 victim searches (the per-cycle bound). drf (checkpoint-aware) beside
//    drf-naive.
//  - Order: the cluster empty, 20 queues × 1,000 pending one-GPU jobs; one call places 10,000.
// items_per_second: jobs started per second.
#include <benchmark/benchmark.h>

#include <memory>

#include "core/cluster_state.h"
#include "sched/scheduler.h"
#include "sim/schedule_benchmark.h"

namespace tessera {
namespace {

struct Input {
  Cluster cluster;
  std::shared_ptr<const QueueTree> tree;
  std::vector<Workload> jobs;
  std::vector<JobView> reclaim_views;  // 10,000 running in q00 + 16 pending in q01
  std::vector<JobView> order_views;    // 20,000 pending
  std::unique_ptr<ClusterState> full;
};

const Input& GetInput() {
  static const Input* const input = [] {
    auto* in = new Input;
    in->cluster = *BuildLeafSpineCluster(1250, 8, 32, 8);
    QueueTreeSpec spec;
    for (int q = 0; q < 20; ++q) {
      QueueSpec s;
      s.name = (q < 10 ? "q0" : "q") + std::to_string(q);
      s.guaranteed.gpu = {true, true, 0.05};
      spec.queues.push_back(s);
    }
    Resources cap;
    for (const auto& n : in->cluster.nodes()) cap += n.capacity;
    in->tree = std::make_shared<const QueueTree>(*QueueTree::Build(spec, cap));
    in->jobs.resize(10'000 + 16 + 20'000);
    auto job = [&](std::size_t i, const std::string& queue, int gpus) -> Workload& {
      Workload& w = in->jobs[i];
      w.id = JobId(static_cast<std::uint32_t>(i));
      w.submit = static_cast<Tick>(i);
      w.queue = queue;
      w.groups.push_back({"worker", 1, TaskShape{1000, 1024, gpus, 1000}});
      return w;
    };
    in->full = std::make_unique<ClusterState>(in->cluster);
    for (std::size_t i = 0; i < 10'000; ++i) {
      JobView v;
      v.job = &job(i, "q00", 1);
      v.phase = JobPhase::kRunning;
      const auto node = static_cast<std::uint32_t>(i / 8);
      v.placement = {
          TaskPlacement{NodeId(node), static_cast<std::uint16_t>(1u << (i % 8)), 1000, 1000, 1024}};
      v.started = 0;
      v.last_checkpoint = static_cast<Tick>((i * 7919) % 3600) * kSecond;
      (void)in->full->Apply(v.placement);
      in->reclaim_views.push_back(v);
    }
    for (std::size_t i = 10'000; i < 10'016; ++i) {
      JobView v;
      v.job = &job(i, "q01", 8);
      in->reclaim_views.push_back(v);
    }
    for (std::size_t i = 10'016; i < in->jobs.size(); ++i) {
      JobView v;
      v.job = &job(i, in->tree->node(static_cast<int>((i - 10'016) % 20)).path, 1);
      in->order_views.push_back(v);
    }
    return in;
  }();
  return *input;
}

Scheduler Make(const char* policy) {
  SchedulerConfig c;
  c.queue_policy = policy;
  c.queues = GetInput().tree;
  return *Scheduler::Create(c);
}

void BM_Reclaim(benchmark::State& state, const char* policy) {
  const Input& in = GetInput();
  const Scheduler s = Make(policy);
  Snapshot snap;
  snap.jobs = in.reclaim_views;
  snap.now = 3600 * kSecond;
  std::int64_t started = 0;
  for (auto _ : state) {
    state.PauseTiming();
    ClusterState working = *in.full;
    state.ResumeTiming();
    const Decisions d = s.Schedule(snap, working);
    for (const auto& x : d) started += x.kind == Decision::Kind::kBind;
  }
  state.SetItemsProcessed(started);
}
BENCHMARK_CAPTURE(BM_Reclaim, drf, "drf")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Reclaim, drf_naive, "drf-naive")->Unit(benchmark::kMillisecond);

void BM_Order(benchmark::State& state) {
  const Input& in = GetInput();
  const Scheduler s = Make("drf");
  Snapshot snap;
  snap.jobs = in.order_views;
  std::int64_t started = 0;
  for (auto _ : state) {
    state.PauseTiming();
    ClusterState working(in.cluster);
    state.ResumeTiming();
    const Decisions d = s.Schedule(snap, working);
    started += static_cast<std::int64_t>(d.size());
  }
  state.SetItemsProcessed(started);
}
BENCHMARK(BM_Order)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
