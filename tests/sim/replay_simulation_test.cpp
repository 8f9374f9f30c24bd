// Replay on a queue: JCT arithmetic on tiny scenarios worked by hand, preemption keeping
// progress, restart cost, unschedulable jobs, determinism, a golden event log, and node
// failures detected after a delay (a job on a dead node neither ends nor saves, then restarts).
#include "sim/replay_simulation.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "sim/summary.h"
#include "sim/workload_builder.h"

namespace tessera {
namespace {

Cluster OneNode(int gpus) {
  Cluster c;
  EXPECT_TRUE(c.AddNode("n0", "V100", gpus, 64000, 1 << 20));
  return c;
}

Workload Job(std::uint32_t id, int gpus, Tick submit_s, Tick duration_s) {
  Workload w;
  w.id = JobId(id);
  w.name = "j" + std::to_string(id);
  w.submit = submit_s * kSecond;
  w.duration = duration_s * kSecond;
  w.groups.push_back({"worker", 1, TaskShape{0, 0, gpus, 1000}});
  return w;
}

ReplayResult Replay(const Cluster& c, const std::vector<Workload>& jobs, const std::string& policy,
                    Tick restart_cost = 0, bool record = false) {
  ReplayOptions o;
  o.scheduler.queue_policy = policy;
  o.restart_cost = restart_cost;
  o.record_events = record;
  auto r = RunReplay(c, jobs, o);
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  return *r;
}

TEST(ReplaySimulationTest, FifoRunsOneAfterAnother) {
  // 4 GPUs; A (4 GPUs, 100 s) at 0, B (4 GPUs, 10 s) at 1.
  // FIFO: A 0→100, B 100→110. JCT A = 100, B = 109; queueing B = 99.
  Cluster c = OneNode(4);
  auto r = Replay(c, {Job(0, 4, 0, 100), Job(1, 4, 1, 10)}, "fifo");
  EXPECT_EQ(r.jobs[0].finish, 100 * kSecond);
  EXPECT_EQ(r.jobs[1].first_start, 100 * kSecond);
  EXPECT_EQ(r.jobs[1].finish, 110 * kSecond);
  EXPECT_EQ(r.preemptions, 0);
  // Allocation: 4 GPUs busy for all 110 s → ratio 1.
  EXPECT_DOUBLE_EQ(r.allocated_gpu_seconds, 440);
  EXPECT_DOUBLE_EQ(r.capacity_gpu_seconds, 440);
}

TEST(ReplaySimulationTest, SrtfPreemptsAndResumesWithoutLosingWork) {
  // SRTF: A starts at 0; at 1 s B (10 s) is shorter than A's 99 s left → A preempted.
  // B 1→11; A resumes at 11 with 99 s left → finishes at 110. Same makespan, B's JCT 10.
  Cluster c = OneNode(4);
  auto r = Replay(c, {Job(0, 4, 0, 100), Job(1, 4, 1, 10)}, "srtf");
  EXPECT_EQ(r.jobs[1].finish, 11 * kSecond);
  EXPECT_EQ(r.jobs[0].finish, 110 * kSecond);
  EXPECT_EQ(r.jobs[0].preemptions, 1);
  EXPECT_TRUE(r.oracle);
  // With a 5 s restart cost A loses 5 s: finishes at 115; 4 GPUs × 5 s lost.
  auto costly = Replay(c, {Job(0, 4, 0, 100), Job(1, 4, 1, 10)}, "srtf", 5 * kSecond);
  EXPECT_EQ(costly.jobs[0].finish, 115 * kSecond);
  EXPECT_DOUBLE_EQ(costly.gpu_seconds_lost, 20);
}

TEST(ReplaySimulationTest, LasPreemptsAtItsThreshold) {
  // las with one threshold of 3600 GPU-s: A (4 GPUs) crosses it at 900 s. B arrives at 100 s
  // and waits (A is still in queue 0 and first by submit). At 900 s A drops to queue 1 and B
  // (queue 0) takes over: B 900→950; A resumes at 950 with 1000−900 = 100 s left → 1050.
  Cluster c = OneNode(4);
  auto r = Replay(c, {Job(0, 4, 0, 1000), Job(1, 4, 100, 50)}, "las");
  EXPECT_EQ(r.jobs[1].first_start, 900 * kSecond);
  EXPECT_EQ(r.jobs[1].finish, 950 * kSecond);
  EXPECT_EQ(r.jobs[0].finish, 1050 * kSecond);
  EXPECT_FALSE(r.oracle);
}

TEST(ReplaySimulationTest, JobsThatCanNeverFitAreUnschedulable) {
  Cluster c = OneNode(4);
  auto r = Replay(c, {Job(0, 8, 0, 10), Job(1, 2, 0, 10)}, "fifo");
  EXPECT_TRUE(r.jobs[0].unschedulable);
  EXPECT_NE(r.jobs[0].reason.find("no node"), std::string::npos);
  EXPECT_EQ(r.jobs[1].finish, 10 * kSecond);
}

TEST(ReplaySimulationTest, ResourcesReturnOnDeparture) {
  Cluster c;
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(c.AddNode("n" + std::to_string(i), "V100", 8, 64000, 1 << 20));
  std::vector<Workload> jobs;
  for (std::uint32_t i = 0; i < 200; ++i) {
    jobs.push_back(Job(i, 1 + static_cast<int>(i * 7 % 8), i * 3, 20 + i * 13 % 200));
    if (i % 10 == 0) jobs.back().groups[0].count = 2;  // some 2-worker gangs
  }
  for (const auto* p : {"fifo", "backfill", "srtf", "srsf", "las"}) {
    auto r = Replay(c, jobs, p);
    for (const auto& j : r.jobs) EXPECT_GE(j.finish, 0) << p << " " << j.name;
    EXPECT_DOUBLE_EQ(r.gpus_allocated.back().second, 0) << p;  // all returned at the end
    EXPECT_LE(r.allocated_gpu_seconds, r.capacity_gpu_seconds + 1e-6) << p;
  }
}

TEST(ReplaySimulationTest, SameSeedSameSummary) {
  Cluster c;
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(c.AddNode("n" + std::to_string(i), "V100", 8, 64000, 1 << 20));
  std::vector<Workload> jobs;
  for (std::uint32_t i = 0; i < 100; ++i)
    jobs.push_back(Job(i, 1 + static_cast<int>(i % 9), i, 50 + i % 70));
  ReplayOptions o;
  o.scheduler.queue_policy = "las";
  o.scheduler.placement_policy = "random";
  o.seed = 5;
  auto a = RunReplay(c, jobs, o);
  auto b = RunReplay(c, jobs, o);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(WithoutWallClock(ReplayResultJson(*a)).dump(),
            WithoutWallClock(ReplayResultJson(*b)).dump());
}

// Handing the scheduler a pre-sorted pending queue is an optimisation only: the decisions are
// those of a snapshot that lists every job.
TEST(ReplaySimulationTest, PresortedQueueDecidesTheSame) {
  Cluster c;
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(c.AddNode("n" + std::to_string(i), "V100", 8, 64000, 1 << 20));
  std::vector<Workload> jobs;
  for (std::uint32_t i = 0; i < 300; ++i) {
    jobs.push_back(Job(i, 1 + static_cast<int>(i * 5 % 8), i * 2, 30 + i * 17 % 400));
    if (i % 9 == 0) jobs.back().groups[0].count = 2;
  }
  for (const auto* p : {"fifo", "backfill", "srtf", "srsf", "las"}) {
    ReplayOptions o;
    o.scheduler.queue_policy = p;
    auto sorted = RunReplay(c, jobs, o);
    o.presorted_queue = false;
    auto naive = RunReplay(c, jobs, o);
    ASSERT_TRUE(sorted && naive);
    EXPECT_EQ(WithoutWallClock(ReplayResultJson(*sorted)).dump(),
              WithoutWallClock(ReplayResultJson(*naive)).dump())
        << p;
  }
}

// Two leaves of one node each under one spine, and a second spine with one leaf of one node.
// Node b has fewer cores, so that bestfit puts a lone 8-GPU job there.
Cluster SpreadCluster() {
  Cluster c;
  EXPECT_TRUE(c.AddNode("a", "H100", 8, 64000, 1 << 20, {0, 0}));
  EXPECT_TRUE(c.AddNode("b", "H100", 8, 32000, 1 << 20, {0, 1}));
  EXPECT_TRUE(c.AddNode("c", "H100", 8, 64000, 1 << 20, {1, 2}));
  c.set_topology(Topology{{"spine", "leaf"}, {{"s0", "s1"}, {"l0", "l1", "l2"}}});
  return c;
}

TEST(ReplaySimulationTest, GangsSpreadBeyondTheirPreferredLevelRunSlower) {
  Cluster c = SpreadCluster();
  // Two 8-GPU workers, 100 s. No leaf holds two nodes: the gang spans spine 0 (a, b).
  auto gang = [](std::uint32_t id, std::string prefer, Tick submit_s) {
    Workload w = Job(id, 8, submit_s, 100);
    w.groups[0].count = 2;
    w.topology.prefer = std::move(prefer);
    return w;
  };
  // prefer leaf, spans a spine: 100 s × 1.1 = 110 s. prefer spine: no slowdown. No
  // preference: none either.
  for (const auto& [prefer, finish_s] :
       std::vector<std::pair<std::string, Tick>>{{"leaf", 110}, {"spine", 100}, {"", 100}}) {
    auto r = Replay(c, {gang(0, prefer, 0)}, "fifo");
    EXPECT_EQ(r.jobs[0].finish, finish_s * kSecond) << prefer;
    EXPECT_EQ(r.jobs[0].span, "spine");
    EXPECT_EQ(r.jobs[0].inner_domains, 2);
  }
  // Configurable: across spines costs 2×. Node b is busy, so the gang spans a and c.
  ReplayOptions o;
  o.scheduler.queue_policy = "fifo";
  o.spread_slowdown = {{"cluster", 2.0}};
  Workload blocker = Job(0, 8, 0, 1000);
  blocker.topology.prefer = "leaf";
  std::vector<Workload> jobs = {blocker, gang(1, "leaf", 1)};
  auto r = RunReplay(c, jobs, o);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->jobs[0].span, "node");
  EXPECT_EQ(r->jobs[0].slowdown, 1.0);
  EXPECT_EQ(r->jobs[1].span, "cluster");
  EXPECT_EQ(r->jobs[1].slowdown, 2.0);
  EXPECT_EQ(r->jobs[1].finish, (1 + 200) * kSecond);
  o.spread_slowdown = {{"spine", 0}};
  EXPECT_FALSE(RunReplay(c, jobs, o));
}

TEST(ReplaySimulationTest, PreemptedSlowGangKeepsItsProgress) {
  // SRTF on one spine of two one-node leaves. A: 2 × 8 GPUs, 100 s of work, prefers a leaf,
  // spans the spine: 110 s of wall time. At 55 s (half its work done: 50 s), B (8 GPUs, 10 s)
  // is shorter and preempts it. B 55→65; A restarts at 65 with 50 s of work: 55 s of wall time
  // at 1.1 → finishes at 120 s.
  Cluster c;
  ASSERT_TRUE(c.AddNode("a", "H100", 8, 64000, 1 << 20, {0, 0}));
  ASSERT_TRUE(c.AddNode("b", "H100", 8, 64000, 1 << 20, {0, 1}));
  c.set_topology(Topology{{"spine", "leaf"}, {{"s0"}, {"l0", "l1"}}});
  Workload a = Job(0, 8, 0, 100);
  a.groups[0].count = 2;
  a.topology.prefer = "leaf";
  Workload b = Job(1, 8, 55, 10);
  b.groups[0].count = 2;
  auto r = Replay(c, {a, b}, "srtf");
  EXPECT_EQ(r.jobs[1].first_start, 55 * kSecond);
  EXPECT_EQ(r.jobs[1].finish, 65 * kSecond);
  EXPECT_EQ(r.jobs[0].preemptions, 1);
  EXPECT_EQ(r.jobs[0].finish, 120 * kSecond);
}

// The event log of a small mixed scenario, checked in. Regenerate with
// TESSERA_UPDATE_GOLDEN=1 after an intended change, and review the diff.
// Two nodes of 4 GPUs; A (4 GPUs, 100 s) at 0 on one node, B (4 GPUs, 10 s) at 0 on the other.
// A's node dies at 20 s and is detected at 30 s: A's process died at 20 (its rank 0: nothing
// saved, no checkpoint interval), so A restarts from scratch at 30 on the other node (free since
// B ended at 10) and ends at 130. B's node took no part. The dead node is unhealthy from 30 on.
TEST(ReplaySimulationTest, ANodeFailureRestartsItsJobsAtDetection) {
  Cluster c;
  ASSERT_TRUE(c.AddNode("n0", "V100", 4, 64000, 1 << 20));
  ASSERT_TRUE(c.AddNode("n1", "V100", 4, 64000, 1 << 20));
  ReplayOptions o;
  o.scheduler.queue_policy = "fifo";
  o.record_events = true;
  auto first = RunReplay(c, {Job(0, 4, 0, 100), Job(1, 4, 0, 10)}, o);
  ASSERT_TRUE(first) << first.error().message;
  std::string a_node;
  for (const auto& e : first->events) {
    if (e.find("start j0 on ") != std::string::npos) a_node = e.substr(e.rfind(' ') + 1);
  }
  ASSERT_FALSE(a_node.empty());
  const NodeId dead = a_node == "n0" ? NodeId(0) : NodeId(1);
  o.node_failures = {{20 * kSecond, dead, kNever}};
  o.failure_detect = 10 * kSecond;
  auto r = RunReplay(c, {Job(0, 4, 0, 100), Job(1, 4, 0, 10)}, o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->recoveries, 1);
  EXPECT_EQ(r->jobs[0].recoveries, 1);
  EXPECT_EQ(r->jobs[0].finish, 130 * kSecond);
  EXPECT_EQ(r->jobs[1].finish, 10 * kSecond);
  // A held its 4 GPUs until the detection: 30 s, then 100 s; B 10 s.
  EXPECT_DOUBLE_EQ(r->allocated_gpu_seconds, 4 * (30 + 100 + 10));
  // A job bound to the dead node before the detection is restarted as well: C (4 GPUs, 5 s)
  // arrives at 25 while A's node is dead but not yet known to be, and only that node is free.
  auto w = RunReplay(c, {Job(0, 4, 0, 100), Job(1, 4, 0, 10), Job(2, 4, 12, 5)}, o);
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_GE(w->recoveries, 1);
  EXPECT_GT(w->jobs[0].finish, 100 * kSecond);
}

TEST(ReplaySimulationTest, GoldenEventLog) {
  Cluster c;
  ASSERT_TRUE(c.AddNode("a", "V100", 4, 64000, 1 << 20));
  ASSERT_TRUE(c.AddNode("b", "V100", 4, 64000, 1 << 20));
  // (gpus, submit s, duration s); trace jobs become gangs of 4-GPU workers where needed.
  const int spec[][3] = {{4, 0, 100}, {2, 5, 30},  {8, 10, 50}, {1, 12, 5},
                         {16, 13, 9}, {3, 40, 20}, {6, 41, 15}, {1, 42, 200}};
  std::vector<Workload> jobs;
  for (std::uint32_t i = 0; i < std::size(spec); ++i) {
    TraceJob t;
    t.id = "j" + std::to_string(i);
    t.gpus = spec[i][0];
    t.submit = spec[i][1] * kSecond;
    t.duration = spec[i][2] * kSecond;
    jobs.push_back(ToWorkload(t, c, JobId(i)));
  }
  std::ostringstream log;
  for (const auto* p : {"fifo", "backfill", "srtf", "las"}) {
    auto r = Replay(c, jobs, p, 0, true);
    log << "# " << p << "\n";
    for (const auto& e : r.events) log << e << "\n";
  }
  const std::string path = "tests/sim/golden/replay_small.txt";
  if (std::getenv("TESSERA_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path) << log.str();
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << path << " is missing; run with TESSERA_UPDATE_GOLDEN=1";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(log.str(), want.str());
}

}  // namespace
}  // namespace tessera
