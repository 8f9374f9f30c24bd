// Elastic jobs in the scheduling cycle, worked by hand on one node of 8 GPUs. The elastic job
// E has a nominal 2 workers × 2 GPUs, min 1, max 4.
#include <gtest/gtest.h>

#include "sched/elastic/elastic_resize.h"
#include "sched/placement/task_placer.h"
#include "sched/scheduler.h"
#include "sched/scheduler_fixtures.h"

namespace tessera {
namespace {

Cluster OneNode() {
  Cluster c;
  EXPECT_TRUE(c.AddNode("n0", "H100", 8, 64000, 1 << 20));
  return c;
}

Workload Job(std::uint32_t id, int workers, int gpus, Tick submit) {
  Workload w;
  w.id = JobId(id);
  w.name = "job-" + std::to_string(id);
  w.submit = submit;
  w.duration = 1000 * kSecond;
  w.groups.push_back({"worker", workers, TaskShape{0, 0, gpus, 1000}});
  return w;
}

Workload Elastic(std::uint32_t id) {
  Workload w = Job(id, 2, 2, 0);
  w.min_workers = 1;
  w.max_workers = 4;
  return w;
}

Scheduler Make(const std::string& queue, bool elastic = true) {
  SchedulerConfig c;
  c.queue_policy = queue;
  c.elastic = elastic;
  return ValidScheduler(c);
}

JobView Running(const Workload& w, int workers, Tick remaining) {
  JobView v;
  v.job = &w;
  v.phase = JobPhase::kRunning;
  v.remaining = remaining;
  for (int i = 0; i < workers; ++i) {
    v.placement.push_back(
        TaskPlacement{NodeId(0), static_cast<std::uint16_t>(0b11U << (2 * i)), 1000, 0, 0});
  }
  return v;
}

TEST(ElasticTest, StartsAtNominalSizeThenGrowsIntoIdleGpus) {
  Cluster c = OneNode();
  ClusterState state(c);
  Workload e = Elastic(0);
  auto d = Make("fifo").Schedule(Snapshot{{Pending(e, e.duration)}, 0, 1}, state);
  ASSERT_EQ(d.size(), 1U);
  EXPECT_EQ(d[0].kind, Decision::Kind::kBind);
  EXPECT_EQ(d[0].placement.size(), 4U);  // 2 nominal + 2 grown: all 8 GPUs
  EXPECT_EQ(state.free_gpu_milli(), 0);
  // Off: the nominal gang only.
  ClusterState fresh(c);
  auto off = Make("fifo", false).Schedule(Snapshot{{Pending(e, e.duration)}, 0, 1}, fresh);
  ASSERT_EQ(off.size(), 1U);
  EXPECT_EQ(off[0].placement.size(), 2U);
}

TEST(ElasticTest, StartsAtItsMinimumWhenTheNominalSizeDoesNotFit) {
  Cluster c = OneNode();
  ClusterState state(c);
  Workload other = Job(1, 1, 6, 0);  // 6 GPUs busy: 2 left, room for 1 worker of E
  JobView r = Running(other, 0, 500 * kSecond);
  r.placement = {TaskPlacement{NodeId(0), 0b111111, 1000, 0, 0}};
  ASSERT_TRUE(state.Apply(r.placement));
  Workload e = Elastic(0);
  auto d = Make("fifo").Schedule(Snapshot{{r, Pending(e, e.duration)}, 0, 1}, state);
  ASSERT_EQ(d.size(), 1U);
  EXPECT_EQ(d[0].kind, Decision::Kind::kBind);
  EXPECT_EQ(d[0].placement.size(), 1U);
}

TEST(ElasticTest, ShrinksToLetTheBlockedHeadStart) {
  // E runs grown to 4 workers (all 8 GPUs). P needs 4 GPUs: E shrinks to its minimum (1 worker,
  // 2 GPUs), P takes 4 of the 6 free, and E grows back into the 2 left: 2 workers.
  Cluster c = OneNode();
  ClusterState state(c);
  Workload e = Elastic(0);
  JobView r = Running(e, 4, 900 * kSecond);
  ASSERT_TRUE(state.Apply(r.placement));
  Workload p = Job(1, 1, 4, 5);
  auto d = Make("fifo").Schedule(Snapshot{{r, Pending(p, p.duration)}, 10 * kSecond, 1}, state);
  ASSERT_EQ(d.size(), 2U);
  EXPECT_EQ(d[0].kind, Decision::Kind::kResize);
  EXPECT_EQ(d[0].job, e.id);
  EXPECT_EQ(d[0].placement.size(), 2U);
  EXPECT_EQ(d[0].placement[0], r.placement[0]);  // rank 0 did not move
  EXPECT_EQ(d[1].kind, Decision::Kind::kBind);
  EXPECT_EQ(d[1].job, p.id);
  EXPECT_EQ(state.free_gpu_milli(), 0);
  // Without elasticity fifo just waits.
  ClusterState fresh(c);
  ASSERT_TRUE(fresh.Apply(r.placement));
  EXPECT_TRUE(Make("fifo", false)
                  .Schedule(Snapshot{{r, Pending(p, p.duration)}, 10 * kSecond, 1}, fresh)
                  .empty());
}

TEST(ElasticTest, HigherPriorityJobsAreNotShrunkForALowerHead) {
  Cluster c = OneNode();
  ClusterState state(c);
  Workload e = Elastic(0);
  e.priority = 10;
  JobView r = Running(e, 4, 900 * kSecond);
  ASSERT_TRUE(state.Apply(r.placement));
  Workload p = Job(1, 1, 4, 5);
  EXPECT_TRUE(
      Make("fifo").Schedule(Snapshot{{r, Pending(p, p.duration)}, 10 * kSecond, 1}, state).empty());
}

TEST(ElasticTest, PreemptiveOrderShrinksInsteadOfPreempting) {
  // SRTF: S (4 GPUs, 10 s) goes before E (900 s left, running with 4 workers = 8 GPUs). A rigid
  // job would be preempted; E keeps its nominal 2 workers (4 GPUs) and S takes the other 4.
  Cluster c = OneNode();
  ClusterState state(c);
  Workload e = Elastic(0);
  JobView r = Running(e, 4, 900 * kSecond);
  ASSERT_TRUE(state.Apply(r.placement));
  Workload s = Job(1, 1, 4, 5);
  s.duration = 10 * kSecond;
  auto d = Make("srtf").Schedule(Snapshot{{r, Pending(s, s.duration)}, 10 * kSecond, 1}, state);
  int binds = 0, resizes = 0, preempts = 0;
  for (const auto& x : d) {
    binds += x.kind == Decision::Kind::kBind;
    resizes += x.kind == Decision::Kind::kResize;
    preempts += x.kind == Decision::Kind::kPreempt;
    if (x.kind == Decision::Kind::kResize) {
      EXPECT_EQ(x.placement.size(), 2U);
    }
  }
  EXPECT_EQ(binds, 1);
  EXPECT_EQ(resizes, 1);
  EXPECT_EQ(preempts, 0);
  EXPECT_EQ(state.free_gpu_milli(), 0);
}

TEST(ElasticTest, ShrinkKeepsTheLowestRanks) {
  Cluster c = OneNode();
  ClusterState state(c);
  Workload e = Elastic(0);
  JobView r = Running(e, 4, 1);
  ASSERT_TRUE(state.Apply(r.placement));
  const Placement kept = ShrinkElastic(state, r.placement, 1);
  ASSERT_EQ(kept.size(), 1U);
  EXPECT_EQ(kept[0], r.placement[0]);
  EXPECT_EQ(state.free_gpu_milli(), 6000);
}

TEST(ElasticTest, GrowsWithinItsDomainUnlessTheDomainIsTooSmall) {
  // Two leaves of two 8-GPU nodes. A job preferring a leaf, running 1 worker (8 GPUs) on n0,
  // grows inside leaf 0 (n1) when its maximum (2 workers) fits a leaf; with a maximum of 3
  // workers (24 GPUs > a leaf's 16) it would stay small for good, so it grows across leaves.
  Cluster c;
  for (std::uint32_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(c.AddNode("n" + std::to_string(i), "H100", 8, 64000, 1 << 20, {0, i / 2}));
  }
  c.set_topology(Topology{{"spine", "leaf"}, {{"spine-0"}, {"leaf-0", "leaf-1"}}});
  auto policy = MakePlacementPolicy("bestfit", {});
  ASSERT_TRUE(policy);
  TaskPlacer placer(**policy, nullptr);
  Workload w = Job(0, 2, 8, 0);
  w.min_workers = 1;
  w.max_workers = 2;
  w.topology.prefer = "leaf";
  const Placement one = {TaskPlacement{NodeId(0), 0xFF, 1000, 0, 0}};
  {
    ClusterState state(c);
    ASSERT_TRUE(state.Apply(one));
    ASSERT_TRUE(state.Apply({TaskPlacement{NodeId(1), 0xFF, 1000, 0, 0}}));  // leaf 0 full
    EXPECT_FALSE(GrowElastic(state, w, one, placer));  // leaf 1 is outside its domain
  }
  w.max_workers = 3;
  {
    ClusterState state(c);
    ASSERT_TRUE(state.Apply(one));
    ASSERT_TRUE(state.Apply({TaskPlacement{NodeId(1), 0xFF, 1000, 0, 0}}));
    auto grown = GrowElastic(state, w, one, placer);
    ASSERT_TRUE(grown);
    EXPECT_EQ(grown->size(), 3U);  // n2 and n3, in leaf 1
    EXPECT_EQ(c.node((*grown)[1].node).domain[1], 1U);
  }
}

}  // namespace
}  // namespace tessera
