// Live resizes of elastic jobs, the pure parts: a kResize decision stops every rank of the unit
// towards Pending and keeps its target; a bind onto the GPUs it frees waits for its ranks to
// exit; while it is being resized the unit is hidden from the scheduler, only the ranks it drops
// count as soon free, and the GPUs a grow was given are nobody else's.
#include "server/resize_applier.h"

#include <gtest/gtest.h>

#include "sched/scheduler.h"
#include "server/decision_applier.h"
#include "state_fixtures.h"

namespace tessera {
namespace {

constexpr const char* kElastic = ", elastic: {minWorkers: 1, maxWorkers: 2}";

struct Cycle {
  CycleSnapshot snapshot;
  Decisions decisions;
};

Cycle Decide(ControllerState& state) {
  const CycleCluster cluster = BuildCycleCluster(state);
  RefreshSchedulingWorkloads(state, cluster);
  Cycle c{BuildCycleSnapshot(state, cluster, 5000, 1, std::make_shared<std::uint64_t>(0)), {}};
  SchedulerConfig config;
  config.elastic = true;  // as the live scheduler runs
  auto scheduler = Scheduler::Create(config);
  EXPECT_TRUE(scheduler) << (scheduler ? "" : scheduler.error().message);
  if (scheduler) c.decisions = scheduler->Schedule(c.snapshot.snap, *c.snapshot.working);
  return c;
}

int CountKind(const Decisions& d, Decision::Kind kind) {
  return static_cast<int>(
      std::count_if(d.begin(), d.end(), [&](const Decision& x) { return x.kind == kind; }));
}

// A running elastic job of 2 workers on node-0 and node-1, and a pending job of priority 100
// that needs one node.
struct ShrinkCase {
  ControllerState state;
  std::int64_t elastic = 0, urgent = 0;
  ShrinkCase() {
    AddNode(state, "node-0");
    AddNode(state, "node-1");
    elastic = AddJob(state, GangYaml("elastic", 2, 4, kElastic));
    RunUnit(state, elastic, 0, {{"node-0", {0, 1, 2, 3}}, {"node-1", {0, 1, 2, 3}}});
    urgent = AddJob(state, GangYaml("urgent", 1, 4, ", priority: 100"));
  }
};

TEST(ResizeApplierTest, AShrinkStopsEveryRankAndTheBindOnItsGpusWaits) {
  ShrinkCase k;
  Cycle c = Decide(k.state);
  ASSERT_EQ(CountKind(c.decisions, Decision::Kind::kResize), 1);
  ASSERT_EQ(CountKind(c.decisions, Decision::Kind::kBind), 1);
  EXPECT_EQ(CountKind(c.decisions, Decision::Kind::kPreempt), 0) << "shrunk, not preempted";
  ChangeBuilder change(k.state);
  AppliedDecisions applied = ApplyDecisions(c.snapshot, c.decisions, change, 6000, 0);
  EXPECT_EQ(applied.resized, 1);
  EXPECT_EQ(applied.bound, 0);
  EXPECT_EQ(applied.deferred, 1) << "the urgent job waits for the dropped rank to exit";
  const JobState& job = k.state.jobs.at(k.elastic);
  const UnitRecord& unit = change.Unit(job, 0);
  EXPECT_EQ(unit.phase, UnitPhase::kStopping);
  EXPECT_EQ(unit.stop_target, UnitPhase::kPending);
  for (auto tid : job.tasks) EXPECT_EQ(change.Task(tid).state, TaskState::kStopping);
  ASSERT_EQ(applied.resizes.size(), 1u);
  const ResizeTarget& target = applied.resizes[0].second;
  EXPECT_EQ(target.from_workers, 2);
  EXPECT_EQ(target.from_attempt, 1);
  ASSERT_EQ(target.nodes, std::vector<std::string>{"node-0"}) << "rank 0 stays where it is";
  bool event = false;
  for (const auto& e : change.change().events) {
    event |= e.type == "JobResizing" &&
             e.message.find("shrinking from 2 workers to 1") != std::string::npos;
  }
  EXPECT_TRUE(event);
}

TEST(ResizeApplierTest, AResizingUnitIsHiddenAndReleasesOnlyTheRanksItDrops) {
  ShrinkCase k;
  Cycle c = Decide(k.state);
  ChangeBuilder change(k.state);
  AppliedDecisions applied = ApplyDecisions(c.snapshot, c.decisions, change, 6000, 0);
  // As if committed: the ranks are stopping, the target kept.
  JobState& job = k.state.jobs.at(k.elastic);
  job.units[0].phase = UnitPhase::kStopping;
  job.units[0].stop_target = UnitPhase::kPending;
  for (auto tid : job.tasks) k.state.tasks.at(tid).state = TaskState::kStopping;
  KeepResizeTargets(k.state, std::move(applied.resizes));
  ASSERT_TRUE(IsResizing(job, 0));

  Cycle next = Decide(k.state);
  ASSERT_EQ(next.snapshot.units.size(), 1u) << "only the urgent job is the scheduler's";
  EXPECT_EQ(next.snapshot.units[0].job_id, k.urgent);
  ASSERT_EQ(next.snapshot.snap.releasing.size(), 1u);
  ASSERT_EQ(next.snapshot.snap.releasing[0].size(), 1u);
  EXPECT_EQ(next.snapshot.cluster.node_names.at(next.snapshot.snap.releasing[0][0].node.value),
            "node-1");
  EXPECT_EQ(CountKind(next.decisions, Decision::Kind::kBind), 0) << "its GPUs are still held";
}

TEST(ResizeApplierTest, TheGpusAGrowWasGivenAreNobodyElses) {
  ControllerState state;
  AddNode(state, "node-0");
  AddNode(state, "node-1");
  const auto elastic = AddJob(state, GangYaml("elastic", 2, 4, kElastic));
  RunUnit(state, elastic, 0, {{"node-0", {0, 1, 2, 3}}});
  Cycle grow = Decide(state);
  ASSERT_EQ(CountKind(grow.decisions, Decision::Kind::kResize), 1);
  ChangeBuilder change(state);
  AppliedDecisions applied = ApplyDecisions(grow.snapshot, grow.decisions, change, 6000, 0);
  ASSERT_EQ(applied.resizes.size(), 1u);
  EXPECT_EQ(applied.resizes[0].second.nodes, (std::vector<std::string>{"node-0", "node-1"}));
  JobState& job = state.jobs.at(elastic);
  job.units[0].phase = UnitPhase::kStopping;
  job.units[0].stop_target = UnitPhase::kPending;
  KeepResizeTargets(state, std::move(applied.resizes));
  // A job that arrives while the old rank stops does not get node-1.
  AddJob(state, GangYaml("late", 1, 4));
  Cycle next = Decide(state);
  EXPECT_EQ(CountKind(next.decisions, Decision::Kind::kBind), 0);
  EXPECT_EQ(next.snapshot.working->free_gpu_milli(), 0);
}

TEST(ResizeApplierTest, AResizeToWhereItRunsIsNoResize) {
  ShrinkCase k;
  const CycleCluster cluster = BuildCycleCluster(k.state);
  ChangeBuilder change(k.state);
  const JobState& job = k.state.jobs.at(k.elastic);
  Placement at;
  for (auto tid : job.tasks) {
    const TaskRecord& t = k.state.tasks.at(tid);
    at.push_back({cluster.ids.at(t.node), 0xF, kMilliPerGpu, 0, 0});
  }
  EXPECT_FALSE(BeginResize(change, job, 0, at, at, cluster, 6000));
  EXPECT_EQ(change.Unit(job, 0).phase, UnitPhase::kRunning);
}

}  // namespace
}  // namespace tessera
