// Backfill with a domain reservation, worked by hand on three leaves of two 8-GPU nodes:
//
//   leaf 0 = n0 n1    leaf 1 = n2 n3    leaf 2 = n4 n5
//
// At t = 0: n0 is free; n1 is busy until 100 s, n2 until 50 s, n3 until 1000 s, n4 until
// 50 s, n5 until 2000 s. The head gang needs 2 × 8 GPUs inside one leaf: the earliest leaf that
// frees up is leaf 0 at 100 s (n0 + n1). A later 8-GPU job of 500 s is waiting.
//
// EASY counting GPUs cluster-wide: 8 free now, 24 at 50 s (n2, n4) ≥ 16, so the shadow time is
// 50 s and 8 GPUs are spare then; the 500-s job "fits the spare" and starts on n0 — the only
// free node — and the head, which needed n0 at 100 s, waits until 500 s. The domain
// reservation holds n0 and n1 from 100 s; the 500-s job may not touch them, finds no other
// free node, and waits; a 90-s job ends before 100 s and may start on n0.
#include "sched/backfill/backfill_gate.h"

#include <gtest/gtest.h>

#include "sched/placement/topology_gang_placer.h"
#include "sched/scheduler.h"
#include "sched/scheduler_fixtures.h"

namespace tessera {
namespace {

Cluster ThreeLeaves() {
  Cluster c;
  for (std::uint32_t i = 0; i < 6; ++i) {
    EXPECT_TRUE(c.AddNode("n" + std::to_string(i), "H100", 8, 64000, 1 << 20, {0, i / 2}));
  }
  c.set_topology(Topology{{"spine", "leaf"}, {{"spine-0"}, {"leaf-0", "leaf-1", "leaf-2"}}});
  return c;
}

Workload Job(std::uint32_t id, int workers, Tick duration, std::string require = "") {
  Workload w;
  w.id = JobId(id);
  w.name = "job-" + std::to_string(id);
  w.submit = id;
  w.duration = duration;
  w.groups.push_back({"worker", workers, TaskShape{0, 0, 8, 1000}});
  w.topology.require = std::move(require);
  return w;
}

struct World {
  Cluster cluster = ThreeLeaves();
  std::vector<Workload> running;
  std::vector<JobView> views;
  Workload head = Job(10, 2, 300 * kSecond, "leaf");
  World() {
    const Tick ends[6] = {0, 100, 50, 1000, 50, 2000};  // seconds; 0 = free
    for (std::uint32_t n = 0; n < 6; ++n) {
      if (ends[n] > 0) running.push_back(Job(20 + n, 1, ends[n] * kSecond));
    }
    std::uint32_t i = 0;
    for (std::uint32_t n = 0; n < 6; ++n) {
      if (ends[n] == 0) continue;
      JobView v;
      v.job = &running[i++];
      v.phase = JobPhase::kRunning;
      v.remaining = ends[n] * kSecond;
      v.placement = {TaskPlacement{NodeId(n), 0xFF, 1000, 0, 0}};
      views.push_back(v);
    }
  }
  ClusterState State() const {
    ClusterState s(cluster);
    for (const auto& v : views) EXPECT_TRUE(s.Apply(v.placement));
    return s;
  }
  Snapshot With(const std::vector<const Workload*>& pending) const {
    Snapshot snap;
    snap.jobs = views;
    for (const Workload* w : pending) {
      JobView v;
      v.job = w;
      v.remaining = w->duration;
      snap.jobs.push_back(v);
    }
    snap.seed = 7;
    return snap;
  }
};

Scheduler Backfill(const std::string& reservation) {
  SchedulerConfig c;
  c.queue_policy = "backfill";
  c.backfill_reservation = reservation;
  return ValidScheduler(c);
}

TEST(BackfillGateTest, ReservesTheEarliestLeafThatFreesUp) {
  World w;
  ClusterState state = w.State();
  auto policy = MakePlacementPolicy("bestfit", {});
  ASSERT_TRUE(policy);
  const TopologyTree tree = TopologyTree::Build(w.cluster);
  TopologyGangPlacer gangs(**policy, tree);
  TaskPlacer placer(**policy, nullptr, &gangs);
  std::vector<ExpectedEnd> ends;
  for (const auto& v : w.views) ends.push_back({v.remaining, &v.placement, 8000});
  Rng rng(1);
  const Reservation r = ReserveEarliest(state, w.head, ends, 0, placer, rng);
  EXPECT_EQ(r.start, 100 * kSecond);  // not 50 s: n2 and n4 are in different leaves
  EXPECT_EQ(r.nodes, (std::vector<NodeId>{NodeId(0), NodeId(1)}));
  EXPECT_EQ(state.free_gpu_milli(), 8000);  // the state itself is untouched
}

TEST(BackfillGateTest, GpuCountingEasyDelaysTheLeafGangAndTheDomainReservationDoesNot) {
  World w;
  Workload long_job = Job(11, 1, 500 * kSecond);
  Workload short_job = Job(12, 1, 90 * kSecond);
  {
    ClusterState state = w.State();
    auto d = Backfill("gpu-count").Schedule(w.With({&w.head, &long_job}), state);
    ASSERT_EQ(d.size(), 1U);  // the 500-s job takes n0, which the head needs at 100 s
    EXPECT_EQ(d[0].job, long_job.id);
    EXPECT_EQ(d[0].placement[0].node, NodeId(0));
  }
  {
    ClusterState state = w.State();
    auto d = Backfill("domain").Schedule(w.With({&w.head, &long_job}), state);
    EXPECT_TRUE(d.empty());
    EXPECT_EQ(state.free_gpu_milli(), 8000);  // the fence around n0 and n1 was taken down
    EXPECT_TRUE(state.node(NodeId(0)).healthy);
  }
  {
    ClusterState state = w.State();
    auto d = Backfill("domain").Schedule(w.With({&w.head, &long_job, &short_job}), state);
    ASSERT_EQ(d.size(), 1U);  // ends at 90 s, before the reservation's 100 s
    EXPECT_EQ(d[0].job, short_job.id);
  }
}

TEST(BackfillGateTest, LongJobsUseNodesOutsideTheReservation) {
  World w;
  // Free n5 as well (its job gone): leaf 2 (n4 + n5) is whole at 50 s, so the reservation moves
  // there, and the 500-s job may run on n0, outside it.
  w.views.pop_back();
  Workload long_job = Job(11, 1, 500 * kSecond);
  ClusterState state = w.State();
  auto d = Backfill("domain").Schedule(w.With({&w.head, &long_job}), state);
  ASSERT_EQ(d.size(), 1U);
  EXPECT_EQ(d[0].placement[0].node, NodeId(0));
}

TEST(BackfillGateTest, UnknownReservationIsRefused) {
  SchedulerConfig c;
  c.queue_policy = "backfill";
  c.backfill_reservation = "nearest";
  auto s = Scheduler::Create(c);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("nearest"), std::string::npos);
}

}  // namespace
}  // namespace tessera
