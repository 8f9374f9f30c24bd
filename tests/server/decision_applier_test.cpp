// The decision applier: decisions computed on a snapshot are applied to the state as it is
// when the cycle takes the lock again. Binds become assigned tasks; a decision whose job was
// cancelled, whose unit moved on, whose node was lost or whose GPUs were taken in between is
// not applied, and its unit stays pending.
#include "server/decision_applier.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/task_place_text.h"
#include "sched/scheduler.h"
#include "server/cycle_record.h"
#include "state_fixtures.h"

namespace tessera {
namespace {

struct Cycle {
  CycleSnapshot snapshot;
  Decisions decisions;
};

// Snapshot and Schedule, as the cycle does before it takes the lock again.
Cycle Decide(ControllerState& state, SchedulerConfig config = {}) {
  const CycleCluster cluster = BuildCycleCluster(state);
  RefreshSchedulingWorkloads(state, cluster);
  Cycle c{BuildCycleSnapshot(state, cluster, 5000, 1, std::make_shared<std::uint64_t>(0)), {}};
  auto scheduler = Scheduler::Create(config);
  EXPECT_TRUE(scheduler) << (scheduler ? "" : scheduler.error().message);
  if (scheduler) c.decisions = scheduler->Schedule(c.snapshot.snap, *c.snapshot.working);
  return c;
}

std::vector<const TaskRecord*> NewTasks(const ChangeBuilder& change, std::int64_t job_id) {
  std::vector<const TaskRecord*> out;
  for (auto id : change.AddedTasks(job_id)) out.push_back(&change.Task(id));
  return out;
}

TEST(DecisionApplierTest, ABindBecomesAssignedTasksOnTheChosenGpus) {
  ControllerState state;
  AddNode(state, "node-0");
  AddNode(state, "node-1");
  const auto job = AddJob(state, GangYaml("gang", 2, 4));
  Cycle c = Decide(state);
  ASSERT_EQ(c.decisions.size(), 1u);
  ChangeBuilder change(state);
  const AppliedDecisions applied = ApplyDecisions(c.snapshot, c.decisions, change, 6000, 0);
  EXPECT_EQ(applied.bound, 1);
  EXPECT_EQ(applied.dropped + applied.deferred, 0);
  const UnitRecord& unit = change.Unit(state.jobs.at(job), 0);
  EXPECT_EQ(unit.phase, UnitPhase::kRunning);
  EXPECT_EQ(unit.attempt, 1);
  EXPECT_EQ(unit.started_ms, 6000);
  const auto tasks = NewTasks(change, job);
  ASSERT_EQ(tasks.size(), 2u);
  std::set<std::string> nodes;
  for (const TaskRecord* t : tasks) {
    EXPECT_EQ(t->state, TaskState::kAssigned);
    EXPECT_EQ(t->gpus, (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(t->master_addr, tasks[0]->master_addr) << "one rendezvous per gang";
    EXPECT_GE(t->master_port, 20000);
    nodes.insert(t->node);
  }
  EXPECT_EQ(nodes.size(), 2u);
  EXPECT_EQ(tasks[0]->rank, 0);
  EXPECT_EQ(tasks[1]->rank, 1);
  EXPECT_EQ(tasks[0]->id, state.next_task_id);
}

TEST(DecisionApplierTest, AJobCancelledBeforeTheApplyIsNotBound) {
  ControllerState state;
  AddNode(state, "node-0");
  const auto cancelled = AddJob(state, GangYaml("cancelled", 1, 2));
  const auto kept = AddJob(state, GangYaml("kept", 1, 2));
  Cycle c = Decide(state);
  ASSERT_EQ(c.decisions.size(), 2u);
  // Between the snapshot and the apply: a user cancels the first job, which ends at once.
  JobState& job = state.jobs.at(cancelled);
  job.rec.cancel_requested = true;
  job.rec.finished_ms = 5500;
  job.units[0].phase = UnitPhase::kCancelled;
  state.active.erase(cancelled);

  ChangeBuilder change(state);
  const AppliedDecisions applied = ApplyDecisions(c.snapshot, c.decisions, change, 6000, 0);
  EXPECT_EQ(applied.bound, 1);
  EXPECT_EQ(applied.dropped, 1);
  ASSERT_EQ(applied.not_applied.size(), 1u);
  EXPECT_NE(applied.not_applied[0].find("cancelled"), std::string::npos) << applied.not_applied[0];
  EXPECT_TRUE(NewTasks(change, cancelled).empty());
  EXPECT_EQ(change.Unit(state.jobs.at(cancelled), 0).phase, UnitPhase::kCancelled);
  EXPECT_EQ(NewTasks(change, kept).size(), 1u);
  EXPECT_TRUE(change.reschedule()) << "the next cycle decides again";
}

TEST(DecisionApplierTest, ABindOntoANodeLostBeforeTheApplyIsDeferred) {
  ControllerState state;
  AddNode(state, "node-0");
  const auto job = AddJob(state, GangYaml("gang", 1, 2));
  Cycle c = Decide(state);
  ASSERT_EQ(c.decisions.size(), 1u);
  state.nodes.at("node-0").rec.status = NodeStatus::kLost;  // liveness ran meanwhile

  ChangeBuilder change(state);
  const AppliedDecisions applied = ApplyDecisions(c.snapshot, c.decisions, change, 6000, 0);
  EXPECT_EQ(applied.bound, 0);
  EXPECT_EQ(applied.deferred, 1);
  EXPECT_NE(applied.not_applied.at(0).find("node-0 is Lost"), std::string::npos)
      << applied.not_applied.at(0);
  EXPECT_TRUE(NewTasks(change, job).empty());
  EXPECT_EQ(change.Unit(state.jobs.at(job), 0).phase, UnitPhase::kPending);
  EXPECT_EQ(applied.waiting, (std::vector<std::int64_t>{job}));
}

TEST(DecisionApplierTest, ABindOntoGpusTakenMeanwhileIsDeferredAsAWhole) {
  ControllerState state;
  AddNode(state, "node-0", 2);
  AddNode(state, "node-1", 2);
  const auto gang = AddJob(state, GangYaml("gang", 2, 2));
  Cycle c = Decide(state);
  ASSERT_EQ(c.decisions.size(), 1u);
  // Another path took GPU 1 of node-1 after the snapshot.
  const auto other = AddJob(state, GangYaml("other", 1, 1));
  RunUnit(state, other, 0, {{"node-1", {1}}}, TaskState::kAssigned);

  ChangeBuilder change(state);
  const AppliedDecisions applied = ApplyDecisions(c.snapshot, c.decisions, change, 6000, 0);
  EXPECT_EQ(applied.deferred, 1);
  EXPECT_NE(applied.not_applied.at(0).find("GPU 1 of node node-1 was taken"), std::string::npos)
      << applied.not_applied.at(0);
  EXPECT_TRUE(NewTasks(change, gang).empty()) << "all or nothing: node-0's part is not bound";
}

TEST(DecisionApplierTest, APreemptionOfAUnitThatMovedOnIsDropped) {
  ControllerState state;
  AddNode(state, "node-0", 2);
  const auto low = AddJob(state, GangYaml("low", 1, 2));
  RunUnit(state, low, 0, {{"node-0", {0, 1}}});
  const auto high = AddJob(state, GangYaml("high", 1, 2, ", priority: 10"));
  SchedulerConfig config;
  config.priority_preemption = true;
  Cycle c = Decide(state, config);
  bool preempts = false;
  for (const auto& d : c.decisions) preempts |= d.kind == Decision::Kind::kPreempt;
  ASSERT_TRUE(preempts);
  // The victim's task failed meanwhile and its unit is being restarted.
  state.jobs.at(low).units[0].phase = UnitPhase::kStopping;

  ChangeBuilder change(state);
  const AppliedDecisions applied = ApplyDecisions(c.snapshot, c.decisions, change, 6000, 0);
  EXPECT_EQ(applied.preempted, 0);
  EXPECT_GE(applied.dropped, 1);
  EXPECT_EQ(change.Unit(state.jobs.at(low), 0).message, "") << "not stopped a second time";
  EXPECT_TRUE(NewTasks(change, high).empty());
}

// The record holds each bind's nodes and GPUs; past its size cap the lists stop, the counts
// stay whole and it says so.
TEST(DecisionApplierTest, TheCycleRecordListsBindsAndStaysUnderItsCap) {
  ControllerState state;
  AddNode(state, "node-0", 8);
  AddNode(state, "node-1", 8);
  const auto gang = AddJob(state, GangYaml("gang", 2, 3));
  Cycle c = Decide(state);
  ChangeBuilder change(state);
  AppliedDecisions applied = ApplyDecisions(c.snapshot, c.decisions, change, 6000, 0);
  ASSERT_EQ(applied.binds.size(), 1u);
  auto record =
      nlohmann::json::parse(CycleRecordMessage({5000, 0, 1}, applied, state, c.snapshot.cluster));
  EXPECT_EQ(record["clock"], 5000);
  EXPECT_EQ(record["bound"], 1);
  EXPECT_EQ(record["truncated"], false);
  ASSERT_EQ(record["binds"].size(), 1u);
  const auto& bind = record["binds"][0];
  EXPECT_EQ(bind["job"], "default/gang");
  EXPECT_EQ(bind["attempt"], 1);
  std::vector<std::string> on;
  for (auto tid : change.AddedTasks(gang)) {
    const TaskRecord& t = change.Task(tid);
    on.push_back(t.node + ":" + std::to_string(t.gpus.front()) + "-" +
                 std::to_string(t.gpus.back()));
  }
  EXPECT_EQ(bind["on"], on);
  // 10,000 binds of one cycle: tens of KB, not MB.
  applied.binds.assign(10000, applied.binds[0]);
  applied.bound = 10000;
  const std::string text = CycleRecordMessage({5000, 0, 1}, applied, state, c.snapshot.cluster);
  EXPECT_LE(text.size(), kMaxCycleRecordBytes);
  record = nlohmann::json::parse(text);
  EXPECT_EQ(record["bound"], 10000);
  EXPECT_EQ(record["truncated"], true);
  EXPECT_GT(record["binds"].size(), 100u);
  EXPECT_EQ(record["binds"].size() + record["omitted"]["binds"].get<std::size_t>(), 10000u);
}

TEST(DecisionApplierTest, TaskPlacesReadBackAsWritten) {
  EXPECT_EQ(TaskPlaceText("n-1", 0b1111, 1000), "n-1:0-3");
  EXPECT_EQ(TaskPlaceText("n-1", 0b100101, 1000), "n-1:0,2,5");
  EXPECT_EQ(TaskPlaceText("n-1", 0b11, 1000), "n-1:0,1");
  EXPECT_EQ(TaskPlaceText("n-1", 0b10, 500), "n-1:1@500");
  EXPECT_EQ(TaskPlaceText("n-1", 0, 0), "n-1");
  for (const std::uint16_t mask : {0b1111, 0b100101, 0b1000000000000001, 0}) {
    const auto back = ParseTaskPlace(TaskPlaceText("n-1", mask, 1000));
    ASSERT_TRUE(back);
    EXPECT_EQ(back->node, "n-1");
    EXPECT_EQ(back->gpu_mask, mask);
  }
  EXPECT_EQ(ParseTaskPlace("n-1:1@500")->gpu_milli, 500);
  for (const char* bad : {"", ":0", "n:16", "n:3-1", "n:x", "n:1@1000", "n:"})
    EXPECT_FALSE(ParseTaskPlace(bad)) << bad;
}

TEST(DecisionApplierTest, APreemptionStopsTheVictimAndThePreemptorWaitsForItsGpus) {
  ControllerState state;
  AddNode(state, "node-0", 2);
  const auto low = AddJob(state, GangYaml("low", 1, 2));
  RunUnit(state, low, 0, {{"node-0", {0, 1}}});
  const auto high = AddJob(state, GangYaml("high", 1, 2, ", priority: 10"));
  SchedulerConfig config;
  config.priority_preemption = true;
  Cycle c = Decide(state, config);

  ChangeBuilder change(state);
  const AppliedDecisions applied = ApplyDecisions(c.snapshot, c.decisions, change, 6000, 0);
  EXPECT_EQ(applied.preempted, 1);
  EXPECT_EQ(applied.bound, 0) << "the victim still holds the GPUs until its processes exit";
  const UnitRecord& victim = change.Unit(state.jobs.at(low), 0);
  EXPECT_EQ(victim.phase, UnitPhase::kStopping);
  EXPECT_EQ(victim.stop_target, UnitPhase::kPending);
  for (auto tid : state.jobs.at(low).tasks) EXPECT_EQ(change.Task(tid).state, TaskState::kStopping);
  EXPECT_TRUE(NewTasks(change, high).empty());
  // The cycle's record names the victim and the job it was preempted for.
  const auto record =
      nlohmann::json::parse(CycleRecordMessage({5000, 7, 3}, applied, state, c.snapshot.cluster));
  EXPECT_EQ(record["seed"], 7);
  EXPECT_EQ(record["cycle"], 3);
  ASSERT_EQ(record["preemptions"].size(), 1u) << record.dump();
  EXPECT_EQ(record["preemptions"][0]["job"], "default/low");
  EXPECT_EQ(record["preemptions"][0]["by"], "default/high");
}

// A gang whose rank 0 lands on a node where a live gang's rendezvous listens takes the next
// port; once that gang's task has ended (a committed change), the port is its own again.
TEST(DecisionApplierTest, ARendezvousPortInUseOnTheNodeIsSkippedUntilItsTaskEnds) {
  ControllerState state;
  AddNode(state, "node-0", 8);
  const auto other = AddJob(state, GangYaml("other", 1, 4));
  RunUnit(state, other, 0, {{"node-0", {4, 5, 6, 7}}});
  const auto gang = AddJob(state, GangYaml("gang", 1, 4));
  const int wanted = MasterPortFor(gang, 1, 0);
  ASSERT_LT(wanted, 31999);
  const std::int64_t live_id = state.jobs.at(other).tasks.at(0);
  {
    ChangeBuilder change(state);
    TaskRecord& live = change.MutableTask(live_id);
    live.master_addr = state.nodes.at("node-0").rec.address;
    live.master_port = wanted;
    change.Finish();
    state.Apply(change, {}, 100);
  }
  const auto port_of_gang = [&] {
    Cycle c = Decide(state);
    ChangeBuilder change(state);
    ApplyDecisions(c.snapshot, c.decisions, change, 6000, 0);
    const auto tasks = NewTasks(change, gang);
    return tasks.size() == 1 ? tasks[0]->master_port : -1;
  };
  EXPECT_EQ(port_of_gang(), wanted + 1);
  {
    ChangeBuilder change(state);
    change.MutableTask(live_id).state = TaskState::kSucceeded;
    change.Finish();
    state.Apply(change, {}, 100);
  }
  EXPECT_TRUE(state.live_endpoints.empty());
  EXPECT_EQ(port_of_gang(), wanted);
}

}  // namespace
}  // namespace tessera
