// Replay with a queue tree: reclaim in the event loop, work lost since the last checkpoint
// (GPU-hours lost worked by hand), per-queue shares against entitlements, and summary.json's
// per-queue and per-kind fields.
#include <gtest/gtest.h>

#include "sim/queue_file.h"
#include "sim/replay_simulation.h"
#include "sim/summary.h"

namespace tessera {
namespace {

Workload Job(std::uint32_t id, const std::string& queue, int gpus, Tick submit_s, Tick duration_s) {
  Workload w;
  w.id = JobId(id);
  w.name = "j" + std::to_string(id);
  w.queue = queue;
  w.submit = submit_s * kSecond;
  w.duration = duration_s * kSecond;
  w.groups.push_back({"worker", 1, TaskShape{0, 0, gpus, 1000}});
  return w;
}

std::shared_ptr<const QueueTree> HalfAndHalf(const Cluster& c) {
  auto spec = ParseQueueFile(
      "queues:\n  - name: a\n    guaranteed: {gpu: 50%}\n  - name: b\n    guaranteed: {gpu: 50%}\n",
      "t.yaml");
  EXPECT_TRUE(spec);
  auto t = QueueTree::Build(*spec, ClusterCapacity(c));
  EXPECT_TRUE(t);
  return std::make_shared<const QueueTree>(std::move(*t));
}

TEST(QueueReplayTest, ReclaimedTrainingResumesFromItsLastCheckpoint) {
  Cluster c;
  ASSERT_TRUE(c.AddNode("n0", "V100", 8, 64000, 1 << 20));
  // b borrows the whole node from t = 0 for 10000 s. a arrives at 1000 s with a 4-GPU job of
  // 500 s. Checkpoints every 600 s: b's job loses 1000 − 600 = 400 s on 8 GPUs = 3200 GPU-s,
  // restarts when a finishes (1500 s) with 10000 − 600 = 9400 s left, and ends at 10900 s.
  std::vector<Workload> jobs = {Job(0, "b", 8, 0, 10000), Job(1, "a", 4, 1000, 500)};
  ReplayOptions o;
  o.scheduler.queue_policy = "drf";
  o.scheduler.queues = HalfAndHalf(c);
  o.checkpoint_interval = 600 * kSecond;
  auto r = RunReplay(c, jobs, o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->preemptions, 1);
  EXPECT_DOUBLE_EQ(r->gpu_seconds_lost, 3200);
  EXPECT_EQ(r->jobs[1].first_start, 1000 * kSecond);
  EXPECT_EQ(r->jobs[1].finish, 1500 * kSecond);
  EXPECT_EQ(r->jobs[0].finish, 10900 * kSecond);
  EXPECT_EQ(r->jobs[0].preemptions, 1);

  const auto j = ReplayResultJson(*r);
  EXPECT_DOUBLE_EQ(j["gpu_hours_lost_to_preemption"].get<double>(), 3200.0 / 3600);
  EXPECT_EQ(j["preemptions"].get<int>(), 1);
  const auto& a = j["queues"]["a"];
  EXPECT_DOUBLE_EQ(a["entitlement"].get<double>(), 0.5);
  // a had demand from 1000 s to 1500 s and held 4 of 8 GPUs all that time.
  EXPECT_DOUBLE_EQ(a["share_mean"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(a["jct_seconds"]["mean"].get<double>(), 500);
  EXPECT_DOUBLE_EQ(a["queue_seconds"]["mean"].get<double>(), 0);
  const auto& b = j["queues"]["b"];
  // b: demand over [0, 10900]; held 8 GPUs for 1000 s + 9400 s = 10400 s: 10400 / 10900.
  EXPECT_NEAR(b["share_mean"].get<double>(), 10400.0 / 10900, 1e-12);
  EXPECT_DOUBLE_EQ(b["gpu_hours_lost_to_preemption"].get<double>(), 3200.0 / 3600);
  EXPECT_EQ(j["kinds"]["TrainingJob"]["jobs"].get<int>(), 2);
  EXPECT_TRUE(a.contains("share_over_time"));
}

TEST(QueueReplayTest, WithoutACheckpointIntervalPreemptionLosesNoWork) {
  Cluster c;
  ASSERT_TRUE(c.AddNode("n0", "V100", 8, 64000, 1 << 20));
  std::vector<Workload> jobs = {Job(0, "b", 8, 0, 10000), Job(1, "a", 4, 1000, 500)};
  ReplayOptions o;
  o.scheduler.queue_policy = "drf";
  o.scheduler.queues = HalfAndHalf(c);
  auto r = RunReplay(c, jobs, o);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->preemptions, 1);
  EXPECT_DOUBLE_EQ(r->gpu_seconds_lost, 0);
  EXPECT_EQ(r->jobs[0].finish, 10500 * kSecond);  // 1000 s done + 9000 s after 1500 s
}

TEST(QueueReplayTest, FifoNeverReclaimsAndStillReportsShares) {
  Cluster c;
  ASSERT_TRUE(c.AddNode("n0", "V100", 8, 64000, 1 << 20));
  std::vector<Workload> jobs = {Job(0, "b", 8, 0, 10000), Job(1, "a", 4, 1000, 500)};
  ReplayOptions o;
  o.scheduler.queue_policy = "fifo";
  o.scheduler.queues = HalfAndHalf(c);
  auto r = RunReplay(c, jobs, o);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->preemptions, 0);
  const auto j = ReplayResultJson(*r);
  // a waited 9000 s with nothing, then held half the node for 500 s: 0.5 × 500 / 9500.
  EXPECT_NEAR(j["queues"]["a"]["share_mean"].get<double>(), 0.5 * 500 / 9500, 1e-12);
  EXPECT_DOUBLE_EQ(j["queues"]["a"]["queue_seconds"]["mean"].get<double>(), 9000);
}

TEST(QueueReplayTest, ReclaimHappensWhenTheGraceEndsWithNoOtherEvent) {
  Cluster c;
  ASSERT_TRUE(c.AddNode("n0", "V100", 8, 64000, 1 << 20));
  auto spec = ParseQueueFile(
      "reclaim: {graceSeconds: 300}\nqueues:\n  - name: a\n    guaranteed: {gpu: 50%}\n"
      "  - name: b\n    guaranteed: {gpu: 50%}\n",
      "t.yaml");
  ASSERT_TRUE(spec);
  auto tree = QueueTree::Build(*spec, ClusterCapacity(c));
  ASSERT_TRUE(tree);
  // b borrows the node from 0 s; a arrives at 100 s. Nothing else happens until 10000 s, yet
  // a starts at 300 s, when b's job has run the grace period.
  std::vector<Workload> jobs = {Job(0, "b", 8, 0, 10000), Job(1, "a", 4, 100, 500)};
  ReplayOptions o;
  o.scheduler.queue_policy = "drf";
  o.scheduler.queues = std::make_shared<const QueueTree>(std::move(*tree));
  auto r = RunReplay(c, jobs, o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->jobs[1].first_start, 300 * kSecond);
  EXPECT_EQ(r->preemptions, 1);
}

}  // namespace
}  // namespace tessera
