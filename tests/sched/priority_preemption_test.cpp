// Priority preemption in the fifo cycle: a blocked head job takes the GPUs of running jobs of
// strictly lower priority that are preemptible, the fewest of them, lowest priority first, and
// preempts nobody while the gangs it needs are already being stopped.
#include "sched/preemption/priority_preemption.h"

#include <gtest/gtest.h>

#include "sched/scheduler.h"
#include "sched/scheduler_fixtures.h"

namespace tessera {
namespace {

Workload Job(std::uint32_t id, int gpus, int priority, bool preemptible = true) {
  Workload w;
  w.id = JobId(id);
  w.name = "job-" + std::to_string(id);
  w.priority = priority;
  w.preemptible = preemptible;
  w.groups.push_back({"worker", 1, TaskShape{0, 0, gpus, 1000}});
  return w;
}

Cluster Nodes(int n, int gpus) {
  Cluster c;
  for (int i = 0; i < n; ++i)
    EXPECT_TRUE(c.AddNode("n" + std::to_string(i), "H100", gpus, 64000, 1 << 20));
  return c;
}

Scheduler Make(bool priority_preemption) {
  SchedulerConfig c;
  c.priority_preemption = priority_preemption;
  return ValidScheduler(c);
}

Placement On(int node, std::uint16_t mask) {
  return {TaskPlacement{NodeId(node), mask, 1000, 0, 0}};
}

JobView Running(const Workload& w, Placement p, Tick started, ClusterState& state) {
  EXPECT_TRUE(state.Apply(p));
  return JobView{&w, JobPhase::kRunning, std::move(p), started, 0, 0, 0};
}

TEST(PriorityPreemptionTest, LowestPriorityVictimGivesWayAndThePreemptorTakesItsGpus) {
  Cluster c = Nodes(2, 4);
  ClusterState state(c);
  Workload a = Job(0, 4, 0), b = Job(1, 4, 5), p = Job(2, 4, 10);
  Snapshot snap{
      {Running(a, On(0, 0b1111), 10, state), Running(b, On(1, 0b1111), 20, state), Pending(p)},
      100,
      1};
  // Off by default: the head job just waits.
  ClusterState off = state;
  EXPECT_TRUE(Make(false).Schedule(snap, off).empty());

  const Decisions d = Make(true).Schedule(snap, state);
  ASSERT_EQ(d.size(), 2U);
  EXPECT_EQ(d[0].kind, Decision::Kind::kPreempt);
  EXPECT_EQ(d[0].job, a.id);  // priority 0 before priority 5
  EXPECT_EQ(d[0].reason, "preempted for job of priority 10 (priority 0)");
  EXPECT_EQ(d[1].kind, Decision::Kind::kBind);
  EXPECT_EQ(d[1].job, p.id);
  EXPECT_EQ(d[1].placement, On(0, 0b1111));
  EXPECT_EQ(state.allocated_gpu_milli(), 8000);
}

TEST(PriorityPreemptionTest, EqualPriorityAndNonPreemptibleJobsAreNeverVictims) {
  Cluster c = Nodes(2, 4);
  ClusterState state(c);
  Workload a = Job(0, 4, 0, /*preemptible=*/false), b = Job(1, 4, 10), p = Job(2, 4, 10);
  Snapshot snap{
      {Running(a, On(0, 0b1111), 10, state), Running(b, On(1, 0b1111), 20, state), Pending(p)},
      100,
      1};
  EXPECT_TRUE(Make(true).Schedule(snap, state).empty());
  EXPECT_EQ(state.allocated_gpu_milli(), 8000);  // as it was
}

// One node of 8 GPUs, all taken: C (priority 1, GPUs 0-1), D (priority 0, GPUs 2-5, started at
// 1), E (priority 0, GPUs 6-7, started at 3). P (priority 10) needs 4 GPUs.
// Candidates, lowest priority first and among equals the latest started: E, D, C. Releasing E
// frees 2 (not enough), then D frees 6: P fits. Reprieve, most important first: D back leaves
// 2 free, too few, so D stays a victim; E back leaves GPUs 2-5 free, enough: E is spared.
TEST(PriorityPreemptionTest, FewestVictimsAfterReprieve) {
  Cluster c = Nodes(1, 8);
  ClusterState state(c);
  Workload cj = Job(0, 2, 1), dj = Job(1, 4, 0), ej = Job(2, 2, 0), pj = Job(3, 4, 10);
  Snapshot snap{{Running(cj, On(0, 0b11), 5, state), Running(dj, On(0, 0b111100), 1, state),
                 Running(ej, On(0, 0b11000000), 3, state), Pending(pj)},
                100,
                1};
  const Decisions d = Make(true).Schedule(snap, state);
  ASSERT_EQ(d.size(), 2U);
  EXPECT_EQ(d[0].kind, Decision::Kind::kPreempt);
  EXPECT_EQ(d[0].job, dj.id);
  EXPECT_EQ(d[1].kind, Decision::Kind::kBind);
  EXPECT_EQ(d[1].placement, On(0, 0b111100));
}

// D of the example above is being stopped (its GPUs still held): P waits for it and preempts
// nobody else, though E and C are of lower priority.
TEST(PriorityPreemptionTest, APreemptorWaitingForItsVictimPreemptsNobodyElse) {
  Cluster c = Nodes(1, 8);
  ClusterState state(c);
  Workload cj = Job(0, 2, 1), ej = Job(2, 2, 0), pj = Job(3, 4, 10);
  ASSERT_TRUE(state.Apply(On(0, 0b111100)));  // D, stopping
  Snapshot snap{
      {Running(cj, On(0, 0b11), 5, state), Running(ej, On(0, 0b11000000), 3, state), Pending(pj)},
      100,
      1};
  snap.releasing.push_back(On(0, 0b111100));
  const ClusterState before = state;
  EXPECT_TRUE(Make(true).Schedule(snap, state).empty());
  EXPECT_EQ(state.allocated_gpu_milli(), before.allocated_gpu_milli());

  // The choice itself, without the cycle around it.
  auto policy = MakePlacementPolicy("bestfit", {});
  ASSERT_TRUE(policy);
  TaskPlacer placer(**policy, nullptr);
  const auto choice = ChoosePriorityVictims(snap, pj, state, placer, 7, {});
  EXPECT_EQ(choice.outcome, PriorityVictims::Outcome::kWait);
  EXPECT_TRUE(choice.victims.empty());
  EXPECT_EQ(state.allocated_gpu_milli(), 8000);  // left as it was found
}

TEST(PriorityPreemptionTest, PreemptiveQueuePoliciesRefuseIt) {
  SchedulerConfig c;
  c.queue_policy = "las";
  c.priority_preemption = true;
  auto s = Scheduler::Create(c);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("priority preemption applies to fifo and backfill"),
            std::string::npos);
}

TEST(PriorityPreemptionTest, OnlineReplicasAreNeverVictimsOfOfflineWorkAndBatchGoesFirst) {
  Cluster c = Nodes(3, 4);
  ClusterState state(c);
  // Same low priority: an inference replica, a training job and a batch job; the preemptor
  // is a higher-priority training job that needs one node.
  Workload serve = Job(0, 4, 0), train = Job(1, 4, 0), batch = Job(2, 4, 0), p = Job(3, 4, 10);
  serve.kind = WorkloadKind::kInference;
  batch.kind = WorkloadKind::kBatch;
  // The batch job started first: by start time alone the training job would be the victim.
  Snapshot snap{{Running(serve, On(0, 0b1111), 30, state), Running(train, On(1, 0b1111), 20, state),
                 Running(batch, On(2, 0b1111), 10, state), Pending(p)},
                100,
                1};
  const Decisions d = Make(true).Schedule(snap, state);
  ASSERT_EQ(d.size(), 2U);
  EXPECT_EQ(d[0].kind, Decision::Kind::kPreempt);
  EXPECT_EQ(d[0].job, batch.id);
  EXPECT_EQ(d[1].placement, On(2, 0b1111));

  // A gang that needs all three nodes would have to evict the replica: it waits instead.
  ClusterState only(c);
  Workload gang = Job(4, 4, 10);
  gang.groups[0].count = 3;
  Snapshot snap2{{Running(serve, On(0, 0b1111), 30, only), Pending(gang)}, 100, 1};
  EXPECT_TRUE(Make(true).Schedule(snap2, only).empty());
}

}  // namespace
}  // namespace tessera
