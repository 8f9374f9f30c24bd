// The pure snapshot builder: which units the scheduler sees, the working state it gets (live
// tasks' GPUs taken, unschedulable nodes unhealthy), stable scheduling ids, and the same
// snapshot from the same state.
#include "server/snapshot_builder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "sched/queue/queue_order.h"
#include "server/job_views.h"
#include "server/live_task_index.h"
#include "server/pending_queue.h"
#include "server/recovery_planner.h"
#include "server/unit_lifecycle.h"
#include "state_fixtures.h"

namespace tessera {
namespace {

CycleSnapshot Build(ControllerState& state, Tick now = 5000, std::uint64_t seed = 7) {
  const CycleCluster cluster = BuildCycleCluster(state);
  RefreshSchedulingWorkloads(state, cluster);
  return BuildCycleSnapshot(state, cluster, now, seed, std::make_shared<std::uint64_t>(0));
}

TEST(SnapshotBuilderTest, PendingAndRunningUnitsWithTheLiveTasksGpusTaken) {
  ControllerState state;
  AddNode(state, "node-0");
  AddNode(state, "node-1");
  const auto running = AddJob(state, GangYaml("running", 2, 2));
  const auto pending = AddJob(state, GangYaml("pending", 1, 4));
  AddJob(state, GangYaml("held", 1, 1), /*held=*/true);
  RunUnit(state, running, 0, {{"node-0", {0, 1}}, {"node-1", {2, 3}}});

  const CycleSnapshot s = Build(state);
  EXPECT_EQ(s.snap.now, 5000);
  EXPECT_EQ(s.snap.seed, 7u);
  ASSERT_EQ(s.snap.jobs.size(), 2u) << "the held job is not seen";
  ASSERT_EQ(s.units.size(), 2u);
  EXPECT_EQ(s.units[0].job_id, running);
  EXPECT_EQ(s.units[0].phase, UnitPhase::kRunning);
  EXPECT_EQ(s.units[0].attempt, 1);
  EXPECT_EQ(s.units[1].job_id, pending);
  EXPECT_EQ(s.units[1].phase, UnitPhase::kPending);
  // The running gang's placement, in rank order: node-0 GPUs 0,1 (mask 0b0011), node-1 GPUs
  // 2,3 (mask 0b1100).
  const JobView& r = s.snap.jobs[0];
  EXPECT_EQ(r.phase, JobPhase::kRunning);
  ASSERT_EQ(r.placement.size(), 2u);
  EXPECT_EQ(s.cluster.node_names.at(r.placement[0].node.value), "node-0");
  EXPECT_EQ(r.placement[0].gpu_mask, 0b0011);
  EXPECT_EQ(r.placement[1].gpu_mask, 0b1100);
  EXPECT_EQ(r.started, 1000);
  // 8 GPUs, 4 taken by the live tasks.
  EXPECT_EQ(s.working->free_gpu_milli(), 4 * kMilliPerGpu);
  // Each view is found back by its workload's scheduling id.
  for (std::size_t i = 0; i < s.snap.jobs.size(); ++i)
    EXPECT_EQ(s.IndexOf(s.snap.jobs[i].job->id), i);
  EXPECT_TRUE(s.problems.empty());
}

TEST(SnapshotBuilderTest, BatchTasksAreUnitsOfOneTaskWithStableDistinctIds) {
  ControllerState state;
  AddNode(state, "node-0");
  const auto gang = AddJob(state, GangYaml("gang", 1, 1));
  const auto batch = AddJob(state, BatchYaml("batch", 3));
  RunUnit(state, batch, 1, {{"node-0", {3}}});

  const CycleSnapshot first = Build(state);
  ASSERT_EQ(first.snap.jobs.size(), 4u);  // the gang, then tasks 0, 1 (running), 2
  std::set<std::uint32_t> ids;
  for (const auto& v : first.snap.jobs) {
    EXPECT_EQ(v.job->TaskCount(), 1);
    ids.insert(v.job->id.value);
  }
  EXPECT_EQ(ids.size(), 4u) << "every unit has its own scheduling id";
  EXPECT_EQ(first.units[0].job_id, gang);
  EXPECT_EQ(first.units[2].job_id, batch);
  EXPECT_EQ(first.units[2].unit, 1);
  EXPECT_EQ(first.snap.jobs[2].phase, JobPhase::kRunning);
  // Ids follow submission (the queue order's tie-break): the gang's is below the batch's.
  EXPECT_LT(first.snap.jobs[0].job->id, first.snap.jobs[1].job->id);

  // Another cycle, the same state: the same ids, and the jobs' own workloads untouched.
  const CycleSnapshot second = Build(state, 6000, 8);
  ASSERT_EQ(second.snap.jobs.size(), first.snap.jobs.size());
  for (std::size_t i = 0; i < first.snap.jobs.size(); ++i) {
    EXPECT_EQ(second.snap.jobs[i].job->id, first.snap.jobs[i].job->id);
    EXPECT_EQ(second.units[i].job_id, first.units[i].job_id);
    EXPECT_EQ(second.units[i].unit, first.units[i].unit);
  }
  EXPECT_FALSE(state.jobs.at(gang).workload.id.valid());
}

TEST(SnapshotBuilderTest, UnschedulableNodesAreUnhealthyAndStoppingGangsAreReleasing) {
  ControllerState state;
  AddNode(state, "node-0");
  AddNode(state, "node-1", 4, NodeStatus::kLost);
  AddNode(state, "node-2");
  state.nodes.at("node-2").has_strays = true;
  const auto stopping = AddJob(state, GangYaml("stopping", 1, 2));
  RunUnit(state, stopping, 0, {{"node-0", {0, 1}}}, TaskState::kStopping);
  state.jobs.at(stopping).units[0].phase = UnitPhase::kStopping;
  AddJob(state, GangYaml("pending", 1, 1));

  const CycleSnapshot s = Build(state);
  ASSERT_EQ(s.snap.jobs.size(), 1u) << "a stopping unit is not scheduled";
  const auto& ids = s.cluster.ids;
  EXPECT_TRUE(s.working->node(ids.at("node-0")).healthy);
  EXPECT_FALSE(s.working->node(ids.at("node-1")).healthy) << "lost";
  EXPECT_FALSE(s.working->node(ids.at("node-2")).healthy) << "runs strays";
  // Only node-0 counts: 4 GPUs, 2 still held by the stopping gang.
  EXPECT_EQ(s.working->free_gpu_milli(), 2 * kMilliPerGpu);
  ASSERT_EQ(s.snap.releasing.size(), 1u);
  EXPECT_EQ(s.snap.releasing[0][0].gpu_mask, 0b0011);
}

TEST(SnapshotBuilderTest, AJobThatCanNeverFitIsLeftOutWithItsReason) {
  ControllerState state;
  AddNode(state, "node-0");
  const auto huge = AddJob(state, GangYaml("huge", 1, 8));  // 8 GPUs on one 4-GPU node
  AddJob(state, GangYaml("small", 1, 1));
  const CycleSnapshot s = Build(state);
  ASSERT_EQ(s.snap.jobs.size(), 1u);
  EXPECT_NE(s.units[0].job_id, huge);
  ASSERT_TRUE(state.jobs.at(huge).never_fits.has_value());
  EXPECT_FALSE(state.jobs.at(huge).never_fits->empty());

  // Without nodes nothing is judged: the job waits for the cluster to grow.
  ControllerState empty;
  const auto waiting = AddJob(empty, GangYaml("huge", 1, 8));
  EXPECT_EQ(Build(empty).snap.jobs.size(), 1u);
  EXPECT_FALSE(empty.jobs.at(waiting).never_fits.has_value());
}

TEST(SnapshotBuilderTest, TheSameStateGivesTheSameSnapshot) {
  ControllerState state;
  for (int n = 0; n < 3; ++n) AddNode(state, "node-" + std::to_string(n));
  for (int j = 0; j < 5; ++j) AddJob(state, GangYaml("job-" + std::to_string(j), 2, 1));
  RunUnit(state, 3, 0, {{"node-2", {1}}, {"node-0", {3}}});
  const CycleCluster cluster = BuildCycleCluster(state);
  RefreshSchedulingWorkloads(state, cluster);
  auto versions = std::make_shared<std::uint64_t>(0);
  const CycleSnapshot a = BuildCycleSnapshot(state, cluster, 100, 1, versions);
  const CycleSnapshot b = BuildCycleSnapshot(state, cluster, 100, 1, versions);
  ASSERT_EQ(a.snap.jobs.size(), b.snap.jobs.size());
  for (std::size_t i = 0; i < a.snap.jobs.size(); ++i) {
    EXPECT_EQ(a.snap.jobs[i].job, b.snap.jobs[i].job) << "the same shared workload";
    EXPECT_EQ(a.snap.jobs[i].phase, b.snap.jobs[i].phase);
    EXPECT_EQ(a.snap.jobs[i].placement.size(), b.snap.jobs[i].placement.size());
  }
  for (int n = 0; n < 3; ++n) {
    EXPECT_EQ(a.working->node(NodeId(n)).gpu_free, b.working->node(NodeId(n)).gpu_free);
    // Versions are fresh in every state, so a long-lived score memo never mixes them up.
    EXPECT_NE(a.working->node(NodeId(n)).version, b.working->node(NodeId(n)).version);
  }
}

// Co-location live: an oversold task takes CPU and memory but no GPU share in the working state
// (its share is lent from the replica), and a running replica's used share is the highest use
// its task reported over the usage window (-1 without a report in it).
TEST(SnapshotBuilderTest, OversoldTasksHoldNoGpuShareAndReplicasShowTheirWindowsUse) {
  ControllerState state;
  AddNode(state, "node-0", 1);
  const auto service = AddJob(
      state,
      "apiVersion: tessera/v1\nkind: InferenceService\nmetadata: {name: chat}\nspec: {replicas: "
      "1, gpusPerReplica: 1, command: [serve]}\n");
  const auto batch = AddJob(state, BatchYaml("eval", 1));
  RunUnit(state, service, 0, {{"node-0", {0}}});
  RunUnit(state, batch, 0, {{"node-0", {0}}});
  const std::int64_t replica = state.jobs.at(service).tasks[0];
  TaskRecord& offline = state.tasks.at(state.jobs.at(batch).tasks[0]);
  offline.gpu_milli = 400;
  offline.cpu_milli = 2000;
  offline.oversold = true;
  ASSERT_TRUE(
      RecordGpuUsageLocked(state, state.gpu_usage, "node-0", {{replica, 0, 0.6, 0}}, 2000, 10000)
          .empty());
  ASSERT_TRUE(
      RecordGpuUsageLocked(state, state.gpu_usage, "node-0", {{replica, 0, 0.25, 0}}, 4000, 10000)
          .empty());
  const CycleCluster cluster = BuildCycleCluster(state);
  RefreshSchedulingWorkloads(state, cluster);
  const CycleSnapshot s =
      BuildCycleSnapshot(state, cluster, 5000, 7, std::make_shared<std::uint64_t>(0), 10000);
  EXPECT_TRUE(s.problems.empty()) << s.problems[0];  // the GPU is not taken twice
  EXPECT_EQ(s.working->free_gpu_milli(), 0);         // the replica's whole GPU, no more
  EXPECT_EQ(s.working->node(NodeId(0)).free.cpu_milli, 64000 - 2000);
  ASSERT_EQ(s.snap.jobs.size(), 2u);
  EXPECT_EQ(s.snap.jobs[0].used_gpu_milli, 600);  // the window's highest, not the latest
  EXPECT_FALSE(s.snap.jobs[0].oversold);
  EXPECT_TRUE(s.snap.jobs[1].oversold);
  // A window that ends before the reports: as much as it holds.
  const CycleSnapshot later =
      BuildCycleSnapshot(state, cluster, 20000, 7, std::make_shared<std::uint64_t>(0), 10000);
  EXPECT_EQ(later.snap.jobs[0].used_gpu_milli, -1);
  // Without a window (no co-location): not looked at.
  const CycleSnapshot off =
      BuildCycleSnapshot(state, cluster, 5000, 7, std::make_shared<std::uint64_t>(0));
  EXPECT_EQ(off.snap.jobs[0].used_gpu_milli, -1);
}

using Json = nlohmann::json;

// One 1-GPU node: a replica of chat on GPU 0 and, on its credit, a 0.4 share of GPU 0 for the
// first unit of `offline_yaml` (oversold). Returns the offline job's id.
std::int64_t OversoldBesideAReplica(ControllerState& state, const std::string& offline_yaml) {
  AddNode(state, "node-0", 1);
  const auto service = AddJob(
      state,
      "apiVersion: tessera/v1\nkind: InferenceService\nmetadata: {name: chat}\nspec: {replicas: "
      "1, gpusPerReplica: 1, command: [serve]}\n");
  const auto offline = AddJob(state, offline_yaml);
  RunUnit(state, service, 0, {{"node-0", {0}}});
  RunUnit(state, offline, 0, {{"node-0", {0}}});
  TaskRecord& t = state.tasks.at(state.jobs.at(offline).tasks[0]);
  t.gpu_milli = 400;
  t.oversold = true;
  return offline;
}

// Node views keep the oversold share apart from what the GPU's holders are allocated, so a GPU
// lent to offline work never reads as more than fully allocated.
TEST(OversoldTasksTest, NodeViewsShowOversoldSharesApart) {
  ControllerState state;
  OversoldBesideAReplica(state, BatchYaml("eval", 1));
  const Json nodes = NodesView(state, 5000);
  ASSERT_EQ(nodes.size(), 1u);
  const Json& n = nodes[0];
  EXPECT_EQ(n["gpusAllocated"], 1.0) << n.dump();
  EXPECT_EQ(n["gpuAllocatedMilli"], Json::array({1000}));
  EXPECT_EQ(n["oversold"], 0.4);
  EXPECT_EQ(n["gpuOversoldMilli"], Json::array({400}));
  EXPECT_EQ(n["liveTasks"], 2);
}

// A lost node's oversold task goes back to Pending as preempted offline work (no restart used,
// JobPreempted); a task holding its own GPUs is restarted as before.
TEST(OversoldTasksTest, AnOversoldTaskLostWithItsNodeIsRequeuedAsPreempted) {
  ControllerState state;
  const auto batch = OversoldBesideAReplica(state, BatchYaml("eval", 1));
  AddNode(state, "node-1", 1);
  const auto own = AddJob(state, BatchYaml("own", 1));
  RunUnit(state, own, 0, {{"node-1", {0}}});
  ChangeBuilder change(state);
  for (auto job : {batch, own}) {
    change.MutableTask(state.jobs.at(job).tasks[0]).state = TaskState::kLost;
    EvaluateUnit(change, state.jobs.at(job), 0, 6000);
  }
  const UnitRecord& requeued = change.Unit(state.jobs.at(batch), 0);
  EXPECT_EQ(requeued.phase, UnitPhase::kPending);
  EXPECT_EQ(requeued.restarts, 0);
  EXPECT_EQ(change.Unit(state.jobs.at(own), 0).restarts, 1);
  std::map<std::string, std::vector<std::string>> types;  // by object
  for (const EventRecord& e : change.change().events) types[e.object].push_back(e.type);
  EXPECT_EQ(types["job/default/eval"], (std::vector<std::string>{"JobPreempted", "JobRequeued"}));
  EXPECT_EQ(types["job/default/own"], (std::vector<std::string>{"JobRestarting", "JobRequeued"}));
}

// Recovery (replace, spares) does not bind an oversold gang's last attempt onto GPUs of its own:
// co-location places it on credit again, as any pending offline work.
TEST(OversoldTasksTest, RecoveryLeavesOversoldWorkToTheScheduler) {
  ControllerState state;
  const auto job = OversoldBesideAReplica(state, GangYaml("tune", 1, 1));
  JobState& gang = state.jobs.at(job);
  gang.units[0].phase = UnitPhase::kPending;
  TaskRecord& lost = state.tasks.at(gang.tasks[0]);
  lost.state = TaskState::kLost;
  state.live_by_node["node-0"].erase(lost.id);
  const CycleCluster cluster = BuildCycleCluster(state);
  RefreshSchedulingWorkloads(state, cluster);
  EXPECT_TRUE(FindRecoveryCandidates(state, cluster, RecoveryMode::kReplace).empty());
  lost.oversold = false;  // the same gang on a GPU of its own is recovered
  EXPECT_EQ(FindRecoveryCandidates(state, cluster, RecoveryMode::kReplace).size(), 1u);
}

// The pending queue and the live tasks' working state kept across cycles (pending_queue.h,
// live_task_index.h), updated from the jobs and tasks noted as changed, give the same working
// state and decisions as a snapshot that lists every pending unit and takes every live task
// afresh: through submissions of several priorities, binds, ends and a job put on hold.
std::string DecisionsText(const Decisions& decisions) {
  std::string out;
  for (const auto& d : decisions) {
    out += std::to_string(static_cast<int>(d.kind)) + ":" + std::to_string(d.job.value);
    for (const auto& tp : d.placement)
      out += " " + std::to_string(tp.node.value) + "/" + std::to_string(tp.gpu_mask);
    out += "\n";
  }
  return out;
}

void BindAsDecided(ControllerState& state, const CycleSnapshot& s, const Decision& d) {
  const SnapshotUnit* u = s.UnitOf(d.job);
  ASSERT_NE(u, nullptr);
  std::vector<std::pair<std::string, std::vector<int>>> ranks;
  for (const auto& tp : d.placement) {
    std::vector<int> gpus;
    for (int g = 0; g < 16; ++g)
      if ((tp.gpu_mask >> g) & 1U) gpus.push_back(g);
    ranks.emplace_back(s.cluster.node_names.at(tp.node.value), gpus);
  }
  RunUnit(state, u->job_id, u->unit, ranks);
  state.NoteChanged(u->job_id);
}

void EndUnit(ControllerState& state, std::int64_t job_id, int unit) {
  JobState& job = state.jobs.at(job_id);
  job.units[static_cast<std::size_t>(unit)].phase = UnitPhase::kSucceeded;
  for (auto tid : job.tasks) {
    TaskRecord& t = state.tasks.at(tid);
    if (t.unit != unit || !IsLive(t.state)) continue;
    t.state = TaskState::kSucceeded;
    state.live_by_node[t.node].erase(tid);
  }
  state.NoteChanged(job_id);
}

TEST(SnapshotBuilderTest, ThePendingQueueDecidesAsAFullSnapshotAcrossCycles) {
  for (const char* policy : {"fifo", "backfill"}) {
    SCOPED_TRACE(policy);
    ControllerState state;
    for (int n = 0; n < 4; ++n) AddNode(state, "node-" + std::to_string(n));
    std::mt19937 rng(11);
    int submitted = 0;
    auto submit = [&](int count) {
      for (int i = 0; i < count; ++i, ++submitted) {
        const std::string name = "job-" + std::to_string(submitted);
        const std::string priority = ", priority: " + std::to_string(rng() % 3);
        if (rng() % 4 == 0) {
          AddJob(state, BatchYaml(name, 1 + static_cast<int>(rng() % 3)));
        } else if (rng() % 5 == 0) {
          AddJob(state,
                 GangYaml(name, 2, 1, priority + ", elastic: {minWorkers: 1, maxWorkers: 2}"));
        } else {
          AddJob(state, GangYaml(name, 1 + static_cast<int>(rng() % 2),
                                 1 + static_cast<int>(rng() % 3), priority));
        }
      }
    };
    submit(30);
    SchedulerConfig config;
    config.queue_policy = policy;
    config.elastic = true;  // as live
    auto scheduler = Scheduler::Create(config);
    ASSERT_TRUE(scheduler);
    const CycleCluster cluster = BuildCycleCluster(state);
    PendingQueue queue;
    LiveTaskIndex live;
    auto versions = std::make_shared<std::uint64_t>(0);
    std::size_t binds = 0;
    std::size_t omitted = 0;  // running views a fifo snapshot left out
    for (int cycle = 0; cycle < 8; ++cycle) {
      SCOPED_TRACE(cycle);
      const Tick now = 5000 + cycle * 1000;
      RefreshSchedulingWorkloads(state, cluster);
      std::vector<std::int64_t> changed;
      changed.swap(state.changed_jobs);
      const auto taken = queue.Update(state, std::move(changed), cycle == 0, *scheduler, now);
      live.Update(state, cluster, taken, cycle == 0, versions);
      const CycleSnapshot full = BuildCycleSnapshot(state, cluster, now, 3, versions);
      const CycleSnapshot queued =
          BuildCycleSnapshot(state, cluster, now, 3, versions, 0, &queue, &live);
      for (int n = 0; n < 4; ++n) {
        EXPECT_EQ(queued.working->node(NodeId(n)).gpu_free, full.working->node(NodeId(n)).gpu_free);
        EXPECT_EQ(queued.working->node(NodeId(n)).healthy, full.working->node(NodeId(n)).healthy);
      }
      // The queue is in the scheduler's order, and the pending units are those of the full one.
      const auto& order = queue.in_order();
      EXPECT_TRUE(std::is_sorted(order.begin(), order.end(), [&](auto* a, auto* b) {
        return QueueOrderBefore(scheduler->queue_policy(), *a, *b, now);
      }));
      std::size_t pending = 0;
      for (const auto& v : full.snap.jobs) {
        if (v.phase != JobPhase::kPending) continue;
        ++pending;
        EXPECT_NE(queued.UnitOf(v.job->id), nullptr);
      }
      std::size_t queued_pending = order.size();
      for (const auto& v : queued.snap.jobs) queued_pending += v.phase == JobPhase::kPending;
      EXPECT_EQ(queued_pending, pending);
      EXPECT_GT(order.size(), 0u);
      // The running units, in the same order and places.
      std::vector<std::string> running_full, running_queued;
      for (const auto& v : full.snap.jobs)
        if (v.phase == JobPhase::kRunning)
          running_full.push_back(
              DecisionsText({{Decision::Kind::kBind, v.job->id, v.placement, {}}}));
      for (const auto& v : queued.snap.jobs)
        if (v.phase == JobPhase::kRunning)
          running_queued.push_back(
              DecisionsText({{Decision::Kind::kBind, v.job->id, v.placement, {}}}));
      EXPECT_EQ(running_queued, running_full);
      const Decisions a = scheduler->Schedule(full.snap, *full.working);
      const Decisions b = scheduler->Schedule(queued.snap, *queued.working);
      ASSERT_EQ(DecisionsText(a), DecisionsText(b));
      // fifo reads only the elastic running jobs: the snapshot may leave the others out.
      const bool every = ReadsEveryRunningJob(*scheduler, config);
      EXPECT_EQ(every, std::string(policy) == "backfill");
      CycleSnapshot lean =
          BuildCycleSnapshot(state, cluster, now, 3, versions, 0, &queue, &live, every);
      omitted += queued.snap.jobs.size() - lean.snap.jobs.size();
      ASSERT_EQ(DecisionsText(scheduler->Schedule(lean.snap, *lean.working)), DecisionsText(a));
      for (const auto& d : a) {
        if (d.kind != Decision::Kind::kBind) continue;
        BindAsDecided(state, full, d);
        ++binds;
      }
      // Every third running unit ends; a job is held; more are submitted.
      int seen = 0;
      for (const SnapshotUnit& u : full.units) {
        if (u.phase == UnitPhase::kRunning && seen++ % 3 == 0) EndUnit(state, u.job_id, u.unit);
      }
      if (cycle == 2) {
        state.jobs.at(static_cast<std::int64_t>(state.jobs.size())).rec.held = true;
        state.NoteChanged(static_cast<std::int64_t>(state.jobs.size()));
      }
      submit(5);
    }
    EXPECT_GT(binds, 10u) << "the cycles bound work";
    EXPECT_EQ(omitted > 0, std::string(policy) == "fifo");
  }
}

}  // namespace
}  // namespace tessera
