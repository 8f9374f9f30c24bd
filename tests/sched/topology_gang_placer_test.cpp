// Topology-aware gang placement, worked by hand on a small two-tier cluster:
//
//   spine 0: leaf 0 = n0  n1  n2  n3     leaf 1 = n4  n5  n6  n7
//   spine 1: leaf 2 = n8  n9  n10 n11    leaf 3 = n12 n13 n14 n15
//
// every node 8 GPUs (a leaf holds 32 GPUs, a spine 64). Capacities below are in GPUs; the placer
// counts milli-GPUs (8 GPUs = 8000).
#include "sched/placement/topology_gang_placer.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "sched/placement/task_placer.h"
#include "sched/scheduler.h"

namespace tessera {
namespace {

constexpr int kSpine = 0;
constexpr int kLeaf = 1;
constexpr int kNode = 2;

Cluster TwoSpines() {
  Cluster c;
  for (std::uint32_t i = 0; i < 16; ++i) {
    const std::uint32_t leaf = i / 4;
    EXPECT_TRUE(c.AddNode("n" + std::to_string(i), "H100", 8, 64000, 1 << 20, {leaf / 2, leaf}));
  }
  c.set_topology(Topology{{"spine", "leaf"},
                          {{"spine-0", "spine-1"}, {"leaf-0", "leaf-1", "leaf-2", "leaf-3"}}});
  return c;
}

Workload Gang(int workers, int gpus, std::string require = "", std::string prefer = "") {
  Workload w;
  w.id = JobId(0);
  w.name = "gang";
  w.groups.push_back({"worker", workers, TaskShape{1000, 1024, gpus, 1000}});
  w.topology = {std::move(require), std::move(prefer)};
  return w;
}

// Takes `gpus` GPUs of node `n` (the lowest-indexed ones).
void Busy(ClusterState& s, std::uint32_t n, int gpus) {
  ASSERT_TRUE(s.Apply(
      {TaskPlacement{NodeId(n), static_cast<std::uint16_t>((1U << gpus) - 1), 1000, 0, 0}}));
}

std::vector<std::uint32_t> NodesOf(const Placement& p) {
  std::vector<std::uint32_t> v;
  for (const auto& t : p) v.push_back(t.node.value);
  return v;
}

class TopologyGangPlacerTest : public ::testing::Test {
 protected:
  TopologyGangPlacerTest()
      : cluster_(TwoSpines()),
        tree_(TopologyTree::Build(cluster_)),
        policy_(*MakePlacementPolicy("bestfit", {})),
        placer_(*policy_, tree_) {}

  std::optional<Placement> Place(ClusterState& s, const Workload& w,
                                 GangPlacementInfo* info = nullptr) {
    Rng rng(7);
    return placer_.Place(s, w, rng, info);
  }

  Cluster cluster_;
  TopologyTree tree_;
  std::unique_ptr<PlacementPolicy> policy_;
  TopologyGangPlacer placer_;
};

TEST_F(TopologyGangPlacerTest, TreeHasOneVertexPerDomain) {
  ASSERT_EQ(tree_.node_level(), kNode);
  ASSERT_EQ(tree_.vertices(kClusterLevel).size(), 1U);
  EXPECT_EQ(tree_.vertices(kClusterLevel)[0].child_count, 2U);
  ASSERT_EQ(tree_.vertices(kSpine).size(), 2U);
  ASSERT_EQ(tree_.vertices(kLeaf).size(), 4U);
  ASSERT_EQ(tree_.vertices(kNode).size(), 16U);
  const auto& spine1 = tree_.vertices(kSpine)[1];
  EXPECT_EQ(spine1.begin, 8U);  // n8..n15
  EXPECT_EQ(spine1.end, 16U);
  EXPECT_EQ(spine1.first_child, 2U);  // leaves 2 and 3
  EXPECT_EQ(spine1.child_count, 2U);
  const auto& leaf3 = tree_.vertices(kLeaf)[3];
  EXPECT_EQ(leaf3.domain, 3U);
  EXPECT_EQ(leaf3.first_child, 12U);
  EXPECT_EQ(leaf3.child_count, 4U);
}

TEST_F(TopologyGangPlacerTest, LevelNumbersAndNames) {
  const Topology& t = cluster_.topology();
  EXPECT_EQ(LevelNumber(t, "spine"), kSpine);
  EXPECT_EQ(LevelNumber(t, "leaf"), kLeaf);
  EXPECT_EQ(LevelNumber(t, "node"), kNode);
  EXPECT_FALSE(LevelNumber(t, "rack"));
  EXPECT_FALSE(LevelNumber(t, "gpu"));
  EXPECT_EQ(LevelName(t, kClusterLevel), "cluster");
  EXPECT_EQ(LevelName(t, kLeaf), "leaf");
  EXPECT_EQ(LevelName(t, kNode), "node");
}

TEST_F(TopologyGangPlacerTest, SpanLevel) {
  auto on = [](std::vector<std::uint32_t> nodes) {
    Placement p;
    for (auto n : nodes) p.push_back(TaskPlacement{NodeId(n), 1, 1000, 0, 0});
    return p;
  };
  EXPECT_EQ(SpanLevel(cluster_, on({5, 5})), kNode);
  EXPECT_EQ(SpanLevel(cluster_, on({4, 7})), kLeaf);
  EXPECT_EQ(SpanLevel(cluster_, on({0, 7})), kSpine);
  EXPECT_EQ(SpanLevel(cluster_, on({0, 8})), kClusterLevel);
  EXPECT_EQ(SpanLevel(cluster_, {}), kClusterLevel);
}

TEST_F(TopologyGangPlacerTest, RequiredLeafOnEmptyClusterTakesTheFirstLeafInRankOrder) {
  ClusterState s(cluster_);
  // 4 × 8 = 32 GPUs: every leaf holds exactly 32, all tie; leaf 0 has the lowest index. Inside
  // it no node holds 32, so nodes are taken whole, most capacity first (all 8), by index.
  GangPlacementInfo info;
  auto p = Place(s, Gang(4, 8, "leaf"), &info);
  ASSERT_TRUE(p);
  EXPECT_EQ(NodesOf(*p), (std::vector<std::uint32_t>{0, 1, 2, 3}));
  for (const auto& t : *p) EXPECT_EQ(t.gpu_mask, 0xFF);
  EXPECT_EQ(info.start_level, kNode);  // no preference: start as tight as a node
  EXPECT_EQ(info.level, kLeaf);
  EXPECT_EQ(info.span_level, kLeaf);
  EXPECT_EQ(s.allocated_gpu_milli(), 32000);
}

TEST_F(TopologyGangPlacerTest, BestFitLeafIsTheFullestThatStillFits) {
  ClusterState s(cluster_);
  Busy(s, 0, 8);  // leaf 0: 24 free
  Busy(s, 4, 2);  // leaf 1: n4 has 6 free, which an 8-GPU worker cannot use: 24 usable
  Busy(s, 5, 8);  // leaf 1: 16 usable
  // 2 × 8 = 16 GPUs, require leaf. Usable: leaf 0 = 24, leaf 1 = 16, leaves 2, 3 = 32.
  // Best fit: leaf 1 (16). Inside it n6 and n7 (8 each).
  auto p = Place(s, Gang(2, 8, "leaf"));
  ASSERT_TRUE(p);
  EXPECT_EQ(NodesOf(*p), (std::vector<std::uint32_t>{6, 7}));
}

TEST_F(TopologyGangPlacerTest, PreferLeafWidensToSpineButNotBeyondRequiredSpine) {
  ClusterState s(cluster_);
  // 6 × 8 = 48 GPUs: no leaf (32) holds it; both spines (64) do and tie: spine 0. Inside,
  // no leaf holds 48: take leaf 0 whole (32, n0..n3), then the tightest leaf that holds the
  // remaining 16: leaf 1, where no node holds 16: n4 then n5.
  GangPlacementInfo info;
  auto p = Place(s, Gang(6, 8, "spine", "leaf"), &info);
  ASSERT_TRUE(p);
  EXPECT_EQ(NodesOf(*p), (std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(info.start_level, kLeaf);
  EXPECT_EQ(info.level, kSpine);
  EXPECT_EQ(info.span_level, kSpine);
  // A second such gang: spine 0 has 16 left, spine 1 64: spine 1, leaves 2 and 3.
  auto q = Place(s, Gang(6, 8, "spine", "leaf"));
  ASSERT_TRUE(q);
  EXPECT_EQ(NodesOf(*q), (std::vector<std::uint32_t>{8, 9, 10, 11, 12, 13}));
  // A third: 16 + 16 = 32 GPUs are free, but in two spines; spine is required: no placement,
  // and nothing was taken.
  const auto before = s.allocated_gpu_milli();
  EXPECT_FALSE(Place(s, Gang(4, 8, "spine", "leaf")));
  EXPECT_EQ(s.allocated_gpu_milli(), before);
  // Without the requirement it may span the spines (leaf 1's n6, n7 and leaf 3's n14, n15).
  GangPlacementInfo wide;
  auto r = Place(s, Gang(4, 8, "", "leaf"), &wide);
  ASSERT_TRUE(r);
  EXPECT_EQ(NodesOf(*r), (std::vector<std::uint32_t>{6, 7, 14, 15}));
  EXPECT_EQ(wide.level, kClusterLevel);
  EXPECT_EQ(wide.span_level, kClusterLevel);
}

TEST_F(TopologyGangPlacerTest, FragmentedSpineFillsTheFullestLeafFirst) {
  ClusterState s(cluster_);
  Busy(s, 0, 8);                                         // leaf 0: n1, n2, n3 free (24)
  for (std::uint32_t n : {4, 5}) Busy(s, n, 8);          // leaf 1: n6, n7 free (16)
  for (std::uint32_t n = 8; n < 16; ++n) Busy(s, n, 8);  // spine 1 full
  // 4 × 8 = 32, require spine, prefer leaf. No leaf has 32; spine 0 has 40. Inside spine 0 no
  // leaf holds 32: leaf 0 whole (24: n1, n2, n3), then the tightest leaf for 8: leaf 1 (16),
  // where one node holds 8: the tightest, ties by index: n6.
  auto p = Place(s, Gang(4, 8, "spine", "leaf"));
  ASSERT_TRUE(p);
  EXPECT_EQ(NodesOf(*p), (std::vector<std::uint32_t>{1, 2, 3, 6}));
}

TEST_F(TopologyGangPlacerTest, ConsecutiveRanksShareANode) {
  ClusterState s(cluster_);
  // 8 × 2 = 16 GPUs, prefer leaf: leaf 0 (all tie). No node holds 16: n0 whole (4 workers),
  // then the tightest node for 8: n1. Ranks 0-3 on n0, 4-7 on n1, GPUs in pairs.
  auto p = Place(s, Gang(8, 2, "", "leaf"));
  ASSERT_TRUE(p);
  EXPECT_EQ(NodesOf(*p), (std::vector<std::uint32_t>{0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ((*p)[0].gpu_mask, 0b11);
  EXPECT_EQ((*p)[1].gpu_mask, 0b1100);
  EXPECT_EQ((*p)[3].gpu_mask, 0b11000000);
  EXPECT_EQ((*p)[4].gpu_mask, 0b11);
}

TEST_F(TopologyGangPlacerTest, SmallGangGoesToTheTightestNode) {
  ClusterState s(cluster_);
  Busy(s, 9, 4);  // n9: 4 free
  Busy(s, 3, 2);  // n3: 6 free
  // 2 × 2 = 4 GPUs, no constraint: start at the node level. Nodes that hold 4: n9 (4 free),
  // n3 (6), the rest (8). Best fit: n9, both ranks on it.
  GangPlacementInfo info;
  auto p = Place(s, Gang(2, 2), &info);
  ASSERT_TRUE(p);
  EXPECT_EQ(NodesOf(*p), (std::vector<std::uint32_t>{9, 9}));
  EXPECT_EQ(info.level, kNode);
  EXPECT_EQ(info.span_level, kNode);
}

TEST_F(TopologyGangPlacerTest, MixedGroupsPutTheRemainderOnAPartialNode) {
  ClusterState s(cluster_);
  Busy(s, 3, 4);  // n3: 4 free
  Workload w = Gang(3, 8, "leaf");
  w.groups.push_back({"worker", 1, TaskShape{1000, 1024, 4, 1000}});
  // 3 × 8 + 1 × 4 = 28 GPUs. A node offers what its best group could take: n3 offers 4 (one
  // 4-GPU worker), the others 8. Leaf 0: 8 + 8 + 8 + 4 = 28, exactly the need: best fit.
  // Inside: n0, n1, n2 (8 each, most first), then the tightest node for the last 4: n3.
  auto p = Place(s, w);
  ASSERT_TRUE(p);
  EXPECT_EQ(NodesOf(*p), (std::vector<std::uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ((*p)[3].gpu_mask, 0xF0);
  EXPECT_EQ(s.free_gpu_milli(), 128000 - 4000 - 28000);
}

TEST_F(TopologyGangPlacerTest, RequireNodeKeepsTheGangOnOneNode) {
  ClusterState s(cluster_);
  Busy(s, 0, 6);
  // 2 × 4 GPUs on one node: n0 has 2 free (no), every other node 8: n1 (lowest index).
  auto p = Place(s, Gang(2, 4, "node"));
  ASSERT_TRUE(p);
  EXPECT_EQ(NodesOf(*p), (std::vector<std::uint32_t>{1, 1}));
  EXPECT_FALSE(Place(s, Gang(3, 4, "node")));  // 12 GPUs on one 8-GPU node: never
}

TEST_F(TopologyGangPlacerTest, PreferenceWiderThanRequirementStartsAtTheRequirement) {
  ClusterState s(cluster_);
  GangPlacementInfo info;
  auto p = Place(s, Gang(2, 8, "leaf", "spine"), &info);
  ASSERT_TRUE(p);
  EXPECT_EQ(info.start_level, kLeaf);
  EXPECT_EQ(NodesOf(*p), (std::vector<std::uint32_t>{0, 1}));
}

TEST_F(TopologyGangPlacerTest, UnhealthyNodesDoNotCount) {
  ClusterState s(cluster_);
  s.SetHealthy(NodeId(1), false);  // leaf 0 now offers 24
  auto p = Place(s, Gang(4, 8, "leaf"));
  ASSERT_TRUE(p);
  EXPECT_EQ(NodesOf(*p), (std::vector<std::uint32_t>{4, 5, 6, 7}));
}

TEST_F(TopologyGangPlacerTest, NoLeafFreeEnoughLeavesStateUnchanged) {
  ClusterState s(cluster_);
  for (std::uint32_t n : {0, 4, 8, 12}) Busy(s, n, 1);  // every leaf: 3 whole nodes + 7 GPUs
  EXPECT_FALSE(Place(s, Gang(4, 8, "leaf")));
  EXPECT_EQ(s.allocated_gpu_milli(), 4000);
}

TEST_F(TopologyGangPlacerTest, UnknownLevelIsNotPlaced) {
  ClusterState s(cluster_);
  EXPECT_FALSE(Place(s, Gang(2, 8, "rack")));
  EXPECT_FALSE(Place(s, Gang(2, 8, "", "nvl72")));
  EXPECT_EQ(s.allocated_gpu_milli(), 0);
}

TEST_F(TopologyGangPlacerTest, Deterministic) {
  ClusterState a(cluster_);
  ClusterState b(cluster_);
  for (auto* s : {&a, &b}) {
    Busy(*s, 2, 3);
    Busy(*s, 9, 8);
  }
  for (int i = 0; i < 5; ++i) {
    auto p = Place(a, Gang(3, 4, "spine", "leaf"));
    auto q = Place(b, Gang(3, 4, "spine", "leaf"));
    ASSERT_TRUE(p);
    ASSERT_TRUE(q);
    EXPECT_EQ(*p, *q);
  }
}

// Random states and gangs of identical workers: a gang is placed exactly when some domain of
// its required level has room (checked by brute force), inside that domain, all-or-nothing,
// with each node's and each leaf's ranks contiguous.
TEST_F(TopologyGangPlacerTest, PropertyRequiredLevelIsExactAndRanksAreContiguous) {
  Rng rng(2024);
  const std::vector<std::string> levels = {"", "spine", "leaf", "node"};
  int placed = 0;
  for (int iter = 0; iter < 400; ++iter) {
    ClusterState s(cluster_);
    for (std::uint32_t n = 0; n < 16; ++n) {
      const int busy = static_cast<int>(rng.Uniform(9)) * static_cast<int>(rng.Uniform(2));
      if (busy > 0) Busy(s, n, busy);
    }
    const int gpus = 1 << rng.Uniform(4);
    const int workers = 1 + static_cast<int>(rng.Uniform(12));
    const std::string require = levels[rng.Uniform(levels.size())];
    const std::string prefer = levels[rng.Uniform(levels.size())];
    const Workload w = Gang(workers, gpus, require, prefer);
    const int level = require.empty() ? kClusterLevel : *LevelNumber(cluster_.topology(), require);
    auto domain_of = [&](std::uint32_t n) -> std::uint32_t {
      if (level == kClusterLevel) return 0;
      if (level == kNode) return n;
      return cluster_.node(NodeId(n)).domain[static_cast<std::size_t>(level)];
    };
    std::map<std::uint32_t, int> room;  // workers each domain can take, before placing
    for (std::uint32_t n = 0; n < 16; ++n) {
      room[domain_of(n)] += s.node(NodeId(n)).FullyFreeGpus(8) / gpus;
    }
    const auto before = s.allocated_gpu_milli();
    auto p = Place(s, w);
    if (!p) {
      EXPECT_EQ(s.allocated_gpu_milli(), before);
      for (const auto& [d, r] : room) EXPECT_LT(r, workers) << "iteration " << iter;
      continue;
    }
    ++placed;
    ASSERT_EQ(static_cast<int>(p->size()), workers);
    EXPECT_EQ(s.allocated_gpu_milli(), before + workers * gpus * 1000);
    for (const auto& t : *p) {
      EXPECT_EQ(domain_of(t.node.value), domain_of(p->front().node.value));
      EXPECT_EQ(t.gpu_count(), gpus);
    }
    auto contiguous = [&](auto key) {
      std::set<std::uint32_t> done;
      for (std::size_t r = 0; r < p->size(); ++r) {
        const auto k = key((*p)[r].node.value);
        if (r > 0 && k != key((*p)[r - 1].node.value)) {
          EXPECT_TRUE(done.insert(key((*p)[r - 1].node.value)).second);
        }
        EXPECT_FALSE(done.count(k)) << "iteration " << iter;
      }
    };
    contiguous([](std::uint32_t n) { return n; });
    contiguous([](std::uint32_t n) { return n / 4; });
  }
  EXPECT_GT(placed, 100);
}

// On a cluster whose every level has one domain (Muri's one switch), placements cannot differ in
// locality: TaskPlacer keeps the policy's task-by-task choice, draw for draw.
TEST(TopologyGangPlacerSingleDomainTest, KeepsThePolicysChoice) {
  Cluster c;
  for (std::uint32_t i = 0; i < 8; ++i) {
    ASSERT_TRUE(c.AddNode("n" + std::to_string(i), "GPU", 8, 64000, 1 << 20, {0}));
  }
  c.set_topology(Topology{{"switch"}, {{"switch-0"}}});
  const TopologyTree tree = TopologyTree::Build(c);
  EXPECT_FALSE(tree.multi_domain());
  const Cluster two_spines = TwoSpines();
  EXPECT_TRUE(TopologyTree::Build(two_spines).multi_domain());
  auto policy = *MakePlacementPolicy("bestfit", {});
  TopologyGangPlacer gangs(*policy, tree);
  const TaskPlacer with(*policy, nullptr, &gangs);
  const TaskPlacer without(*policy, nullptr);
  for (int workers : {2, 3, 5}) {
    ClusterState a(c);
    ClusterState b(c);
    Rng ra(11);
    Rng rb(11);
    auto p = with.PlaceGang(a, Gang(workers, 8), ra);
    auto q = without.PlaceGang(b, Gang(workers, 8), rb);
    ASSERT_TRUE(p);
    ASSERT_TRUE(q);
    EXPECT_EQ(*p, *q);
  }
  // A constraint still goes through the topology placer.
  ClusterState s(c);
  Rng rng(1);
  EXPECT_FALSE(with.PlaceGang(s, Gang(2, 8, "rack"), rng));
  auto p = with.PlaceGang(s, Gang(2, 4, "node"), rng);
  ASSERT_TRUE(p);
  EXPECT_EQ((*p)[0].node, (*p)[1].node);
}

// NeverFitsReason (task_placer.cpp) names the key, the level and why.
TEST_F(TopologyGangPlacerTest, NeverFitsReasons) {
  EXPECT_FALSE(NeverFitsReason(cluster_, Gang(4, 8, "leaf")));
  EXPECT_FALSE(NeverFitsReason(cluster_, Gang(8, 8, "spine", "leaf")));
  EXPECT_FALSE(NeverFitsReason(cluster_, Gang(16, 8, "", "leaf")));  // preferences never refuse

  auto unknown = NeverFitsReason(cluster_, Gang(2, 8, "rack"));
  ASSERT_TRUE(unknown);
  EXPECT_EQ(*unknown,
            "topology.require: level 'rack' does not exist in this cluster (levels: spine, leaf, "
            "node)");
  auto unknown_pref = NeverFitsReason(cluster_, Gang(2, 8, "", "gpu"));
  ASSERT_TRUE(unknown_pref);
  EXPECT_NE(unknown_pref->find("topology.prefer: level 'gpu'"), std::string::npos);

  // 5 × 8 = 40 GPUs in one leaf of 32.
  auto too_big = NeverFitsReason(cluster_, Gang(5, 8, "leaf"));
  ASSERT_TRUE(too_big);
  EXPECT_EQ(*too_big,
            "topology.require: leaf: no leaf can ever hold the job's 5 tasks (40 GPUs); the "
            "largest leaf has 32 GPUs of an accepted model");
  auto one_node = NeverFitsReason(cluster_, Gang(3, 4, "node"));
  ASSERT_TRUE(one_node);
  EXPECT_NE(one_node->find("no node can ever hold"), std::string::npos);
  // A single task satisfies any existing level.
  EXPECT_FALSE(NeverFitsReason(cluster_, Gang(1, 8, "leaf")));
}

// Through the scheduler: the default gang placement is topology-aware; "greedy" is the
// baseline; an unknown name is refused.
TEST_F(TopologyGangPlacerTest, SchedulerUsesTheTopologyPlacer) {
  auto make = [](const std::string& gangs) {
    SchedulerConfig c;
    c.queue_policy = "fifo";
    c.gang_placement = gangs;
    return Scheduler::Create(c);
  };
  auto bad = make("scatter");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("topology, greedy"), std::string::npos);

  // n0 (leaf 0) and n12 (leaf 3) have 6 GPUs busy: best fit for a 2-GPU task would pick them.
  auto run = [&](const std::string& gangs) {
    ClusterState s(cluster_);
    Busy(s, 0, 6);
    Busy(s, 12, 6);
    Workload w = Gang(4, 8, "", "leaf");
    JobView v;
    v.job = &w;
    Snapshot snap{{v}, 0, 3};
    auto d = make(gangs)->Schedule(snap, s);
    EXPECT_EQ(d.size(), 1U);
    return d.empty() ? Placement{} : d[0].placement;
  };
  // Topology: 32 GPUs in one leaf: leaves 1 and 2 offer 32 (n0 and n12 offer nothing to an
  // 8-GPU worker); best fit ties: leaf 1.
  EXPECT_EQ(NodesOf(run("topology")), (std::vector<std::uint32_t>{4, 5, 6, 7}));
  EXPECT_EQ(SpanLevel(cluster_, run("topology")), kLeaf);
  // Greedy: four whole-node workers anywhere; all free nodes tie under bestfit and the seeded
  // draw scatters them. It is still a valid placement of 32 GPUs.
  const Placement greedy = run("greedy");
  ASSERT_EQ(greedy.size(), 4U);
  for (const auto& t : greedy) EXPECT_EQ(t.gpu_mask, 0xFF);
}

}  // namespace
}  // namespace tessera
