// The scheduling cycle: gangs all-or-nothing, FIFO blocking, EASY backfill never delaying the
// head job, preemptive orders (SRTF, LAS), determinism.
#include "sched/scheduler.h"

#include <gtest/gtest.h>

#include "sched/scheduler_fixtures.h"

namespace tessera {
namespace {

Workload Job(std::uint32_t id, int workers, int gpus_per_worker, Tick submit = 0,
             Tick duration = 0) {
  Workload w;
  w.id = JobId(id);
  w.name = "job-" + std::to_string(id);
  w.submit = submit;
  w.duration = duration;
  w.groups.push_back({"worker", workers, TaskShape{0, 0, gpus_per_worker, 1000}});
  return w;
}

Cluster Nodes(int n, int gpus) {
  Cluster c;
  for (int i = 0; i < n; ++i)
    EXPECT_TRUE(c.AddNode("n" + std::to_string(i), "H100", gpus, 64000, 1 << 20));
  return c;
}

Scheduler Make(const std::string& queue, const std::string& placement = "bestfit") {
  SchedulerConfig c;
  c.queue_policy = queue;
  c.placement_policy = placement;
  return ValidScheduler(c);
}

TEST(SchedulerTest, UnknownPoliciesAreRefused) {
  SchedulerConfig c;
  c.queue_policy = "lottery";
  auto s = Scheduler::Create(c);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("lottery"), std::string::npos);
}

TEST(SchedulerTest, GangStartsAllOrNothing) {
  Cluster c = Nodes(2, 4);
  ClusterState state(c);
  Workload big = Job(0, 3, 4);   // 12 GPUs > 8: never all at once
  Workload fits = Job(1, 2, 4);  // 8 GPUs, two workers on distinct nodes
  auto s = Make("fifo");
  Snapshot snap{{Pending(big)}, 0, 1};
  EXPECT_TRUE(s.Schedule(snap, state).empty());
  EXPECT_EQ(state.allocated_gpu_milli(), 0);  // nothing half-taken
  snap.jobs = {Pending(fits)};
  auto d = s.Schedule(snap, state);
  ASSERT_EQ(d.size(), 1U);
  ASSERT_EQ(d[0].placement.size(), 2U);
  EXPECT_NE(d[0].placement[0].node, d[0].placement[1].node);
  EXPECT_EQ(d[0].placement[0].gpu_mask, 0b1111);
  EXPECT_EQ(state.allocated_gpu_milli(), 8000);
}

TEST(SchedulerTest, FifoHeadBlocksTheQueue) {
  Cluster c = Nodes(1, 8);
  ClusterState state(c);
  ASSERT_TRUE(state.Apply({TaskPlacement{NodeId(0), 0b1111, 1000, 0, 0}}));  // 4 free
  Workload head = Job(0, 1, 8, 0);
  Workload small = Job(1, 1, 1, 1);
  Snapshot snap{{Pending(small), Pending(head)}, 10, 1};
  EXPECT_TRUE(Make("fifo").Schedule(snap, state).empty());
}

TEST(SchedulerTest, BackfillNeverDelaysTheHeadJob) {
  Cluster c = Nodes(1, 8);
  ClusterState state(c);
  // A running job holds 4 GPUs until t=100 s.
  Workload running = Job(9, 1, 4, 0, 100 * kSecond);
  JobView r = Pending(running, 100 * kSecond);
  r.phase = JobPhase::kRunning;
  r.placement = {TaskPlacement{NodeId(0), 0b1111, 1000, 0, 0}};
  ASSERT_TRUE(state.Apply(r.placement));
  Workload head = Job(0, 1, 8, 1, 50 * kSecond);       // needs all 8: shadow time = 100 s
  Workload short_job = Job(1, 1, 2, 2, 60 * kSecond);  // ends at 60 s ≤ 100 s: may backfill
  Workload long_job = Job(2, 1, 2, 3, 500 * kSecond);  // would hold 2 GPUs past 100 s: may not
  Snapshot snap{{r, Pending(head, head.duration), Pending(long_job, long_job.duration),
                 Pending(short_job, short_job.duration)},
                0,
                1};
  auto d = Make("backfill").Schedule(snap, state);
  ASSERT_EQ(d.size(), 1U);
  EXPECT_EQ(d[0].job, JobId(1));
  // With fifo, nothing passes the blocked head.
  ClusterState fresh(c);
  ASSERT_TRUE(fresh.Apply(r.placement));
  EXPECT_TRUE(Make("fifo").Schedule(snap, fresh).empty());
}

TEST(SchedulerTest, SrtfPreemptsLongerRunningJob) {
  Cluster c = Nodes(1, 8);
  ClusterState state(c);
  Workload long_job = Job(0, 1, 8, 0, 1000 * kSecond);
  JobView r = Pending(long_job, 900 * kSecond);
  r.phase = JobPhase::kRunning;
  r.placement = {TaskPlacement{NodeId(0), 0xFF, 1000, 0, 0}};
  ASSERT_TRUE(state.Apply(r.placement));
  Workload short_job = Job(1, 1, 4, 5, 10 * kSecond);
  Snapshot snap{{r, Pending(short_job, 10 * kSecond)}, 100 * kSecond, 1};
  auto d = Make("srtf").Schedule(snap, state);
  ASSERT_EQ(d.size(), 2U);
  EXPECT_EQ(d[0].kind, Decision::Kind::kBind);
  EXPECT_EQ(d[0].job, JobId(1));
  EXPECT_EQ(d[1].kind, Decision::Kind::kPreempt);
  EXPECT_EQ(d[1].job, JobId(0));
  EXPECT_EQ(state.allocated_gpu_milli(), 4000);
}

TEST(SchedulerTest, PreemptiveOrderKeepsJobsThatStillFit) {
  Cluster c = Nodes(2, 4);
  ClusterState state(c);
  Workload a = Job(0, 1, 4, 0, 1000 * kSecond);
  JobView r = Pending(a, 900 * kSecond);
  r.phase = JobPhase::kRunning;
  r.placement = {TaskPlacement{NodeId(1), 0xF, 1000, 0, 0}};
  ASSERT_TRUE(state.Apply(r.placement));
  Workload b = Job(1, 1, 4, 5, 10 * kSecond);  // shorter, but node 0 is free: no preemption
  Snapshot snap{{r, Pending(b, 10 * kSecond)}, 100 * kSecond, 1};
  auto d = Make("srtf").Schedule(snap, state);
  ASSERT_EQ(d.size(), 1U);
  EXPECT_EQ(d[0].kind, Decision::Kind::kBind);
  EXPECT_EQ(d[0].placement[0].node, NodeId(0));
}

TEST(SchedulerTest, LasFavoursLeastAttainedServiceAndWakesAtThreshold) {
  Cluster c = Nodes(1, 4);
  ClusterState state(c);
  Workload old_job = Job(0, 1, 4, 0);
  JobView r = Pending(old_job);
  r.phase = JobPhase::kRunning;
  r.started = 0;
  r.placement = {TaskPlacement{NodeId(0), 0xF, 1000, 0, 0}};
  ASSERT_TRUE(state.Apply(r.placement));
  // Threshold 3600 GPU-s: at 4 GPUs the job crosses it after 900 s.
  auto las = Make("las");
  Snapshot early{{r}, 100 * kSecond, 1};
  EXPECT_EQ(las.NextReorderTime(early), 900 * kSecond);
  // At t=1000 s it has 4000 GPU-s: queue 1. A new job (queue 0) preempts it.
  Workload fresh = Job(1, 1, 4, 1000 * kSecond);
  Snapshot later{{r, Pending(fresh)}, 1000 * kSecond, 1};
  auto d = las.Schedule(later, state);
  ASSERT_EQ(d.size(), 2U);
  EXPECT_EQ(d[0].job, JobId(1));
  EXPECT_EQ(d[1].kind, Decision::Kind::kPreempt);
}

TEST(SchedulerTest, SameInputsSameDecisions) {
  Cluster c = Nodes(16, 8);
  std::vector<Workload> jobs;
  for (std::uint32_t i = 0; i < 40; ++i) jobs.push_back(Job(i, 1 + i % 3, 1 + i % 8, i));
  auto run = [&] {
    ClusterState state(c);
    Snapshot snap;
    snap.seed = 99;
    for (const auto& w : jobs) snap.jobs.push_back(Pending(w));
    auto d = Make("fifo", "random").Schedule(snap, state);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
    for (const auto& x : d) {
      for (const auto& t : x.placement)
        out.emplace_back(x.job.value, t.node.value * 100 + t.gpu_mask);
    }
    return out;
  };
  EXPECT_EQ(run(), run());
  EXPECT_FALSE(run().empty());
}

}  // namespace
}  // namespace tessera
