// The drf policy: weighted dominant shares worked by hand, hierarchical order, borrow limits,
// reclaim only after the grace period (an elastic borrower shrunk rather than evicted, and
// grown only within its queue's limit), priority preemption inside a queue, victim sets that
// free a usable placement and no more (gang-consistent, minimal), checkpoint-aware against
// naive victim choice, and the kind rules (no InferenceService evicted for offline work;
// BatchJob victims first).
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <memory>

#include "sched/quota/fair_share_cycle.h"
#include "sched/scheduler.h"

namespace tessera {
namespace {

Cluster Nodes(int n, int gpus) {
  Cluster c;
  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(c.AddNode("n" + std::to_string(i), "H100", gpus, 64000, 1 << 20));
  }
  return c;
}

QueueSpec Leaf(std::string name, double gpus, double weight = 1, std::string parent = "") {
  QueueSpec q;
  q.name = std::move(name);
  q.parent = std::move(parent);
  if (gpus > 0) q.guaranteed.gpu = {true, false, gpus};
  q.weight = weight;
  return q;
}

// A scenario: a cluster, a tree, running jobs with their placements applied, pending jobs.
struct Scenario {
  Cluster cluster;
  std::shared_ptr<const QueueTree> tree;
  std::deque<Workload> jobs;  // stable addresses
  std::vector<JobView> views;
  std::uint32_t next_id = 0;

  Scenario(int nodes, int gpus, std::vector<QueueSpec> queues, Tick grace = 0)
      : Scenario(Nodes(nodes, gpus), std::move(queues), grace) {}
  Scenario(Cluster c, std::vector<QueueSpec> queues, Tick grace = 0) : cluster(std::move(c)) {
    QueueTreeSpec spec;
    spec.queues = std::move(queues);
    spec.reclaim_grace = grace;
    Resources cap;
    for (const auto& n : cluster.nodes()) cap += n.capacity;
    auto t = QueueTree::Build(spec, cap);
    EXPECT_TRUE(t) << t.error().message;
    tree = std::make_shared<const QueueTree>(std::move(*t));
  }

  Workload& Add(const std::string& queue, int gpus, int priority = 0,
                WorkloadKind kind = WorkloadKind::kTraining) {
    Workload w;
    w.id = JobId(next_id++);
    w.name = "job-" + std::to_string(w.id.value);
    w.queue = tree->node(tree->Find(queue)).path;
    w.priority = priority;
    w.kind = kind;
    w.groups.push_back({"worker", 1, TaskShape{0, 0, gpus, 1000}});
    jobs.push_back(std::move(w));
    return jobs.back();
  }
  // Running on `node`, GPUs `mask`, since `started`, last checkpoint at `checkpoint`.
  const Workload& Run(const std::string& queue, int node, std::uint16_t mask, Tick started,
                      Tick checkpoint, int priority = 0,
                      WorkloadKind kind = WorkloadKind::kTraining) {
    Workload& w = Add(queue, std::popcount(mask), priority, kind);
    JobView v;
    v.job = &w;
    v.phase = JobPhase::kRunning;
    v.placement = {TaskPlacement{NodeId(static_cast<std::uint32_t>(node)), mask, 1000, 0, 0}};
    v.started = started;
    v.last_checkpoint = checkpoint;
    views.push_back(v);
    return w;
  }
  const Workload& Wait(const std::string& queue, int gpus, Tick submit, int priority = 0,
                       WorkloadKind kind = WorkloadKind::kTraining) {
    Workload& w = Add(queue, gpus, priority, kind);
    w.submit = submit;
    JobView v;
    v.job = &w;
    views.push_back(v);
    return w;
  }

  Decisions Schedule(Tick now, const std::string& policy = "drf", bool elastic = false) {
    ClusterState state(cluster);
    for (const auto& v : views) {
      if (v.phase == JobPhase::kRunning) {
        EXPECT_TRUE(state.Apply(v.placement));
      }
    }
    SchedulerConfig config;
    config.queue_policy = policy;
    config.queues = tree;
    config.elastic = elastic;
    auto s = Scheduler::Create(config);
    EXPECT_TRUE(s) << s.error().message;
    Snapshot snap;
    snap.jobs = views;
    snap.now = now;
    snap.seed = 7;
    return s->Schedule(snap, state);
  }
};

std::vector<std::uint32_t> Preempted(const Decisions& d) {
  std::vector<std::uint32_t> out;
  for (const auto& x : d) {
    if (x.kind == Decision::Kind::kPreempt) out.push_back(x.job.value);
  }
  std::sort(out.begin(), out.end());
  return out;
}
std::vector<std::uint32_t> Bound(const Decisions& d) {
  std::vector<std::uint32_t> out;
  for (const auto& x : d) {
    if (x.kind == Decision::Kind::kBind) out.push_back(x.job.value);
  }
  return out;
}

TEST(FairShareTest, WeightedDominantShareIsTheLargestFractionOverTheWeight) {
  const Resources capacity{100'000, 1'000 * 1024, 10'000};  // 100 cores, 1000 GiB, 10 GPUs
  const Resources usage{20'000, 100 * 1024, 1'000};         // 20% CPU, 10% memory, 10% GPUs
  EXPECT_DOUBLE_EQ(WeightedDominantShare(usage, capacity, 1), 0.2);  // CPU dominates
  EXPECT_DOUBLE_EQ(WeightedDominantShare(usage, capacity, 2), 0.1);
  EXPECT_DOUBLE_EQ(WeightedDominantShare({}, capacity, 1), 0.0);
}

TEST(FairShareTest, TheQueueWithTheSmallerWeightedShareGoesFirst) {
  // 8 GPUs, 1 free. a (weight 1) holds 4 GPUs: 0.5; b (weight 1) holds 3: 0.375. b's job starts
  // although a's was submitted first.
  Scenario s(1, 8, {Leaf("a", 0), Leaf("b", 0)});
  s.Run("a", 0, 0b1111, 0, 0);
  s.Run("b", 0, 0b1110000, 0, 0);
  const auto& a = s.Wait("a", 1, 1);
  const auto& b = s.Wait("b", 1, 2);
  EXPECT_EQ(Bound(s.Schedule(10)), std::vector<std::uint32_t>{b.id.value});
  (void)a;
}

TEST(FairShareTest, WeightsScaleTheShare) {
  // a has weight 3 and holds 4 of 8 GPUs: 0.5 / 3 = 0.167; b holds 3: 0.375 / 1. a goes first.
  Scenario s(1, 8, {Leaf("a", 0, 3), Leaf("b", 0, 1)});
  s.Run("a", 0, 0b1111, 0, 0);
  s.Run("b", 0, 0b1110000, 0, 0);
  const auto& a = s.Wait("a", 1, 2);
  s.Wait("b", 1, 1);
  EXPECT_EQ(Bound(s.Schedule(10)), std::vector<std::uint32_t>{a.id.value});
}

TEST(FairShareTest, SharesAreComparedAtEachLevelOfTheTree) {
  // org x = {x1, x2}, org y. x1 holds 4 GPUs, y 2, x2 nothing. At the top x (4) > y (2), so
  // y's job goes first although x2's leaf holds less.
  Scenario s(1, 8, {Leaf("x", 0), Leaf("x1", 0, 1, "x"), Leaf("x2", 0, 1, "x"), Leaf("y", 0)});
  s.Run("x1", 0, 0b1111, 0, 0);
  s.Run("y", 0, 0b110000, 0, 0);
  s.Wait("x2", 2, 1);
  const auto& y = s.Wait("y", 2, 2);
  const auto d = s.Schedule(10);
  ASSERT_EQ(Bound(d).size(), 1U);
  EXPECT_EQ(Bound(d)[0], y.id.value);
}

TEST(FairShareTest, ABorrowLimitHoldsAJobBackEvenOnAnIdleCluster) {
  QueueSpec a = Leaf("a", 2);
  a.borrow_limit.gpu = {true, false, 1};  // at most 2 + 1 GPUs
  Scenario s(1, 8, {a, Leaf("b", 2)});
  s.Run("a", 0, 0b111, 0, 0);
  s.Wait("a", 1, 1);
  EXPECT_TRUE(s.Schedule(10).empty());
}

// 8 GPUs; a and b are guaranteed 4 each; b borrows all 8 with eight 1-GPU jobs started at 0.
Scenario Borrowed(Tick grace) {
  Scenario s(1, 8, {Leaf("a", 4), Leaf("b", 4)}, grace);
  for (int g = 0; g < 8; ++g) {
    // Checkpointed at 60 s × g: job g loses (now − 60 g) GPU-seconds.
    s.Run("b", 0, static_cast<std::uint16_t>(1u << g), 0, 60 * kSecond * g);
  }
  return s;
}

TEST(FairShareTest, ReclaimWaitsForTheGracePeriod) {
  Scenario s = Borrowed(300 * kSecond);
  s.Wait("a", 2, 50 * kSecond);
  EXPECT_TRUE(s.Schedule(100 * kSecond).empty());  // b's jobs have run 100 s < 300 s
}

TEST(FairShareTest, ReclaimAfterTheGraceEvictsTheCheapestMinimalSet) {
  Scenario s = Borrowed(300 * kSecond);
  const auto& a = s.Wait("a", 2, 50 * kSecond);
  const auto d = s.Schedule(600 * kSecond);
  // Two GPUs are needed: the two most recently checkpointed jobs (6 and 7) lose
  // 1 × (600 − 360) + 1 × (600 − 420) = 420 GPU-seconds, the least of any pair.
  EXPECT_EQ(Preempted(d), (std::vector<std::uint32_t>{6, 7}));
  EXPECT_EQ(Bound(d), std::vector<std::uint32_t>{a.id.value});
  for (const auto& x : d) {
    if (x.kind == Decision::Kind::kPreempt) {
      EXPECT_NE(x.reason.find("reclaimed by queue a"), std::string::npos) << x.reason;
    }
  }
}

// b borrows both nodes with one elastic job of 2 whole-node workers (1..2); a wants one node.
Scenario ElasticBorrower(Tick grace) {
  Scenario s(2, 4, {Leaf("a", 4), Leaf("b", 4)}, grace);
  Workload& e = s.Add("b", 4);
  e.groups[0].count = 2;
  e.min_workers = 1;
  e.max_workers = 2;
  JobView v;
  v.job = &e;
  v.phase = JobPhase::kRunning;
  v.placement = {TaskPlacement{NodeId(0), 0b1111, 1000, 0, 0},
                 TaskPlacement{NodeId(1), 0b1111, 1000, 0, 0}};
  s.views.push_back(v);
  return s;
}

TEST(FairShareTest, ReclaimShrinksAnElasticBorrowerInsteadOfEvictingIt) {
  Scenario s = ElasticBorrower(0);
  const auto& a = s.Wait("a", 4, 1);
  const auto d = s.Schedule(600 * kSecond, "drf", /*elastic=*/true);
  EXPECT_TRUE(Preempted(d).empty());
  ASSERT_EQ(Bound(d), std::vector<std::uint32_t>{a.id.value});
  int resizes = 0;
  for (const auto& x : d) {
    if (x.kind != Decision::Kind::kResize) continue;
    ++resizes;
    ASSERT_EQ(x.placement.size(), 1u);
    EXPECT_EQ(x.placement[0].node, NodeId(0)) << "rank 0 stays";
  }
  EXPECT_EQ(resizes, 1);
  // Without elasticity the borrower is evicted whole.
  Scenario plain = ElasticBorrower(0);
  plain.Wait("a", 4, 1);
  EXPECT_EQ(Preempted(plain.Schedule(600 * kSecond)).size(), 1u);
}

TEST(FairShareTest, AnElasticJobGrowsOnlyWithinItsQueuesLimit) {
  for (bool limited : {true, false}) {
    QueueSpec b = Leaf("b", 4);
    if (limited) b.borrow_limit.gpu = {true, false, 0};  // never beyond its 4 GPUs
    Scenario s(2, 4, {Leaf("a", 4), b});
    Workload& e = s.Add("b", 4);
    e.groups[0].count = 2;
    e.min_workers = 1;
    e.max_workers = 2;
    JobView v;
    v.job = &e;
    v.phase = JobPhase::kRunning;
    v.placement = {TaskPlacement{NodeId(0), 0b1111, 1000, 0, 0}};
    s.views.push_back(v);
    const auto d = s.Schedule(10 * kSecond, "drf", /*elastic=*/true);
    if (limited) {
      EXPECT_TRUE(d.empty());
    } else {
      ASSERT_EQ(d.size(), 1u);
      EXPECT_EQ(d[0].kind, Decision::Kind::kResize);
      EXPECT_EQ(d[0].placement.size(), 2u);
    }
  }
}

TEST(FairShareTest, AGpuOnlyGuaranteeStillReclaimsForJobsThatAlsoNeedCpu) {
  // The tree guarantees GPUs only; every job also asks for CPU and memory.
  Scenario s = Borrowed(0);
  for (auto& w : s.jobs) {
    w.groups[0].shape.cpu_milli = 2000;
    w.groups[0].shape.memory_mib = 4096;
  }
  auto& a = s.Add("a", 2);
  a.groups[0].shape.cpu_milli = 2000;
  JobView v;
  v.job = &a;
  s.views.push_back(v);
  const auto d = s.Schedule(600 * kSecond);
  EXPECT_EQ(Preempted(d).size(), 2U);
  EXPECT_EQ(Bound(d), std::vector<std::uint32_t>{a.id.value});
}

TEST(FairShareTest, NoReclaimBeyondTheGuarantee) {
  // a already holds its 4 guaranteed GPUs (a borrows nothing; b borrows nothing either): a's
  // next job waits, nothing is evicted.
  Scenario s(1, 8, {Leaf("a", 4), Leaf("b", 4)});
  s.Run("a", 0, 0b1111, 0, 0);
  s.Run("b", 0, 0b11110000, 0, 0);
  s.Wait("a", 1, 1);
  EXPECT_TRUE(s.Schedule(1000 * kSecond).empty());
}

TEST(FairShareTest, PriorityPreemptionInsideAQueueNeedsNoGrace) {
  Scenario s(1, 4, {Leaf("a", 0)}, 3600 * kSecond);
  s.Run("a", 0, 0b11, 0, 0, /*priority=*/0);
  s.Run("a", 0, 0b1100, 0, 0, /*priority=*/5);
  const auto& urgent = s.Wait("a", 2, 1, /*priority=*/10);
  const auto d = s.Schedule(10 * kSecond);
  EXPECT_EQ(Preempted(d), std::vector<std::uint32_t>{0});  // the lower priority one
  EXPECT_EQ(Bound(d), std::vector<std::uint32_t>{urgent.id.value});
}

TEST(FairShareTest, VictimsFreeAPlacementTheGangCanUseNotScatteredGpus) {
  // Two nodes of 4 GPUs. a's job needs 4 GPUs on one node. b borrows: node 0 has b's 1-GPU jobs
  // on GPUs 0 and 1 (2 free); node 1 has a 2-GPU and a 1-GPU job (1 free). The cheapest single
  // eviction (job 3, 1 GPU on node 1) would make 4 GPUs free in all but 2 + 2 across nodes:
  // useless. The victims must both come from one node, and be just enough.
  Scenario s(2, 4, {Leaf("a", 4), Leaf("b", 4)});
  s.Run("b", 0, 0b0001, 0, 0);             // job 0: loses 1 × 100
  s.Run("b", 0, 0b0010, 0, 0);             // job 1: loses 1 × 100
  s.Run("b", 1, 0b0011, 0, 0);             // job 2: loses 2 × 100
  s.Run("b", 1, 0b0100, 0, 99 * kSecond);  // job 3: loses 1 × 1, the cheapest
  const auto& a = s.Wait("a", 4, 1);
  const auto d = s.Schedule(100 * kSecond);
  // Node 0: {0, 1} lose 200; node 1: {2, 3} lose 201. Node 0 it is.
  EXPECT_EQ(Preempted(d), (std::vector<std::uint32_t>{0, 1}));
  ASSERT_EQ(Bound(d), std::vector<std::uint32_t>{a.id.value});
  for (const auto& x : d) {
    if (x.kind == Decision::Kind::kBind) {
      ASSERT_EQ(x.placement.size(), 1U);
      EXPECT_EQ(x.placement[0].node, NodeId(0));
      EXPECT_EQ(x.placement[0].gpu_count(), 4);
    }
  }
}

TEST(FairShareTest, VictimsOfAGangRespectItsTopologyConstraint) {
  // Two leaves of two 4-GPU nodes each, every node held by one 4-GPU job of b. a's gang needs
  // 2 workers × 4 GPUs inside one leaf. The two cheapest victims (nodes 0 and 2, 4 × 10 each)
  // sit in different leaves: evicting them frees 8 GPUs the gang may not use. Leaf 1's pair
  // (4 × 10 + 4 × 500) is cheaper than leaf 0's (4 × 10 + 4 × 1000).
  Cluster c;
  for (std::uint32_t i = 0; i < 4; ++i) {
    EXPECT_TRUE(c.AddNode("n" + std::to_string(i), "H100", 4, 64000, 1 << 20, {i / 2}));
  }
  c.set_topology(Topology{{"leaf"}, {{"leaf-0", "leaf-1"}}});
  Scenario s(std::move(c), {Leaf("a", 8), Leaf("b", 8)});
  const Tick now = 1000 * kSecond;
  s.Run("b", 0, 0b1111, 0, now - 10 * kSecond);    // job 0, leaf 0
  s.Run("b", 1, 0b1111, 0, now - 1000 * kSecond);  // job 1, leaf 0
  s.Run("b", 2, 0b1111, 0, now - 10 * kSecond);    // job 2, leaf 1
  s.Run("b", 3, 0b1111, 0, now - 500 * kSecond);   // job 3, leaf 1
  Workload& gang = s.Add("a", 4);
  gang.groups[0].count = 2;
  gang.topology.require = "leaf";
  JobView v;
  v.job = &gang;
  s.views.push_back(v);
  const auto d = s.Schedule(now);
  EXPECT_EQ(Preempted(d), (std::vector<std::uint32_t>{2, 3}));
  ASSERT_EQ(Bound(d), std::vector<std::uint32_t>{gang.id.value});
  for (const auto& x : d) {
    if (x.kind != Decision::Kind::kBind) continue;
    ASSERT_EQ(x.placement.size(), 2U);
    for (const auto& t : x.placement) EXPECT_GE(t.node.value, 2U);  // both in leaf 1
  }
  // The naive order (most recently started first; all started at 0, so by id) also keeps the
  // gang inside one leaf: it is only the cost that differs.
  Scenario n = [&] {
    Cluster c2;
    for (std::uint32_t i = 0; i < 4; ++i) {
      EXPECT_TRUE(c2.AddNode("n" + std::to_string(i), "H100", 4, 64000, 1 << 20, {i / 2}));
    }
    c2.set_topology(Topology{{"leaf"}, {{"leaf-0", "leaf-1"}}});
    return Scenario(std::move(c2), {Leaf("a", 8), Leaf("b", 8)});
  }();
  for (int node = 0; node < 4; ++node) n.Run("b", node, 0b1111, 0, 0);
  Workload& g2 = n.Add("a", 4);
  g2.groups[0].count = 2;
  g2.topology.require = "leaf";
  JobView v2;
  v2.job = &g2;
  n.views.push_back(v2);
  EXPECT_EQ(Preempted(n.Schedule(now, "drf-naive")), (std::vector<std::uint32_t>{0, 1}));
}

TEST(FairShareTest, TheVictimSetIsMinimal) {
  // One node of 8 GPUs, all held by b: X (1 GPU, loses 1 × 10), Y (4 GPUs, 4 × 50) and Z
  // (3 GPUs, 3 × 100). a needs 4. Cheapest first, X then Y frees 5 and fits; but Y alone frees
  // 4, so X is given back: the set is {Y}.
  Scenario s(1, 8, {Leaf("a", 4), Leaf("b", 4)});
  s.Run("b", 0, 0b1, 0, 90 * kSecond);        // X = job 0
  s.Run("b", 0, 0b11110, 0, 50 * kSecond);    // Y = job 1
  s.Run("b", 0, 0b11100000, 0, 0 * kSecond);  // Z = job 2
  s.Wait("a", 4, 1);
  EXPECT_EQ(Preempted(s.Schedule(100 * kSecond)), std::vector<std::uint32_t>{1});
}

TEST(FairShareTest, CheckpointAwareVictimsLoseLessThanNaiveOnes) {
  // Node of 8 GPUs held by b's two 4-GPU jobs. P started last (at 2000 s) and has not
  // checkpointed: evicting it at 3600 s loses 4 × 1600 = 6400 GPU-s. Q started at 0 and
  // checkpointed at 3500 s: 4 × 100 = 400 GPU-s. Naive (most recently started first, as
  // Kueue and Volcano) takes P; checkpoint-aware takes Q.
  auto make = [] {
    Scenario s(1, 8, {Leaf("a", 4), Leaf("b", 4)});
    s.Run("b", 0, 0b1111, 2000 * kSecond, 2000 * kSecond);  // P = job 0
    s.Run("b", 0, 0b11110000, 0, 3500 * kSecond);           // Q = job 1
    s.Wait("a", 4, 1);
    return s;
  };
  Scenario aware = make();
  EXPECT_EQ(Preempted(aware.Schedule(3600 * kSecond, "drf")), std::vector<std::uint32_t>{1});
  Scenario naive = make();
  EXPECT_EQ(Preempted(naive.Schedule(3600 * kSecond, "drf-naive")), std::vector<std::uint32_t>{0});
  JobView p;
  p.job = &naive.jobs[0];
  p.started = 2000 * kSecond;
  p.last_checkpoint = 2000 * kSecond;
  EXPECT_DOUBLE_EQ(GpuSecondsLost(p, 3600 * kSecond), 6400);
}

TEST(FairShareTest, InferenceReplicasAreNeverEvictedForOfflineWork) {
  Scenario s(1, 8, {Leaf("a", 4), Leaf("b", 4)});
  s.Run("b", 0, 0b11111111, 0, 0, 0, WorkloadKind::kInference);
  s.Wait("a", 2, 1, /*priority=*/100, WorkloadKind::kTraining);
  EXPECT_TRUE(s.Schedule(1000 * kSecond).empty());
  // A higher-priority InferenceService of the owner may reclaim it.
  Scenario t(1, 8, {Leaf("a", 4), Leaf("b", 4)});
  t.Run("b", 0, 0b11111111, 0, 0, 0, WorkloadKind::kInference);
  t.Wait("a", 2, 1, /*priority=*/100, WorkloadKind::kInference);
  EXPECT_EQ(Preempted(t.Schedule(1000 * kSecond)), std::vector<std::uint32_t>{0});
}

TEST(FairShareTest, FindVictimsItselfNeverEvictsInferenceForOfflineWork) {
  Cluster c = Nodes(1, 8);
  ClusterState state(c);
  Workload infer, train;
  infer.id = JobId(0);
  infer.kind = WorkloadKind::kInference;
  infer.groups.push_back({"replica", 1, TaskShape{0, 0, 8, 1000}});
  train.id = JobId(1);
  train.priority = 1000;
  train.groups.push_back({"worker", 1, TaskShape{0, 0, 8, 1000}});
  JobView v;
  v.job = &infer;
  v.phase = JobPhase::kRunning;
  v.placement = {TaskPlacement{NodeId(0), 0xFF, 1000, 0, 0}};
  ASSERT_TRUE(state.Apply(v.placement));
  auto policy = MakePlacementPolicy("bestfit", {});
  ASSERT_TRUE(policy);
  TaskPlacer placer(**policy, nullptr);
  Rng rng(1);
  EXPECT_FALSE(FindVictims(state, train, {&v}, 100, VictimOrder::kCheckpointAware, placer, rng));
  EXPECT_EQ(state.allocated_gpu_milli(), 8000);  // untouched
  EXPECT_FALSE(MayEvict(infer, train));
  infer.priority = 5;
  Workload online = train;
  online.kind = WorkloadKind::kInference;
  online.priority = 6;
  EXPECT_TRUE(MayEvict(infer, online));
  EXPECT_TRUE(FindVictims(state, online, {&v}, 100, VictimOrder::kCheckpointAware, placer, rng));
}

TEST(FairShareTest, BatchVictimsGoFirstEvenWhenTheyCostMore) {
  Scenario s(1, 8, {Leaf("a", 4), Leaf("b", 4)});
  s.Run("b", 0, 0b1111, 0, 0, 0, WorkloadKind::kBatch);                     // loses 4 × 1000
  s.Run("b", 0, 0b11110000, 0, 990 * kSecond, 0, WorkloadKind::kTraining);  // loses 4 × 10
  s.Wait("a", 4, 1);
  EXPECT_EQ(Preempted(s.Schedule(1000 * kSecond)), std::vector<std::uint32_t>{0});
}

TEST(FairShareTest, NotPreemptibleJobsAreNeverVictims) {
  Scenario s(1, 8, {Leaf("a", 4), Leaf("b", 4)});
  s.Run("b", 0, 0b11111111, 0, 0);
  s.jobs[0].preemptible = false;
  s.Wait("a", 2, 1);
  EXPECT_TRUE(s.Schedule(1000 * kSecond).empty());
}

TEST(FairShareTest, DrfNeedsAQueueTree) {
  SchedulerConfig c;
  c.queue_policy = "drf";
  auto s = Scheduler::Create(c);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("needs a queue tree"), std::string::npos);
}

}  // namespace
}  // namespace tessera
