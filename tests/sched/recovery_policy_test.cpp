// Recovery policies on small clusters worked by hand: where a requeued gang goes, which node
// replaces a failed one (same leaf, then same spine, then anywhere; hot spares first for
// "spares"), how far "shrink" shrinks and when it grows back, the drain rule, and the registry.
#include "sched/recovery/recovery_policy.h"

#include <gtest/gtest.h>

#include "core/cluster_state.h"

namespace tessera {
namespace {

// `n` nodes of 8 GPUs; synthetic topology: leaves of `per_leaf` nodes, `per_spine` leaves each.
Cluster Nodes(int n) {
  Cluster c;
  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(c.AddNode("n" + std::to_string(i), "H100", 8, 64000, 1 << 20));
  }
  return c;
}

Workload Gang(int workers, std::string require = "") {
  Workload w;
  w.id = JobId(0);
  w.name = "gang";
  w.groups.push_back({"worker", workers, TaskShape{0, 0, 8, 1000}});
  w.topology.require = std::move(require);
  return w;
}

// The placement of a gang on these nodes, in rank order, applied to `state`.
Placement On(ClusterState& state, const std::vector<int>& nodes) {
  Placement p;
  for (int n : nodes)
    p.push_back(TaskOn(state, NodeId(static_cast<std::uint32_t>(n)), {0, 0, 8, 1000}));
  EXPECT_TRUE(state.Apply(p));
  return p;
}

std::vector<int> NodesOf(const Placement& p) {
  std::vector<int> v;
  for (const auto& t : p) v.push_back(static_cast<int>(t.node.value));
  return v;
}

struct Fixture {
  explicit Fixture(int nodes, int per_leaf, int per_spine)
      : cluster(Nodes(nodes)),
        topology(BuildRecoveryTopology(cluster, {per_leaf, per_spine})),
        state(cluster),
        is_spare(static_cast<std::size_t>(nodes), 0),
        spares(static_cast<std::size_t>(topology.leaf_count())) {}

  void Spare(int n) {
    is_spare[static_cast<std::size_t>(n)] = 1;
    spares[topology.leaf(NodeId(static_cast<std::uint32_t>(n)))].push_back(
        NodeId(static_cast<std::uint32_t>(n)));
  }
  RecoveryView View(bool with_spares = false) const {
    RecoveryView v;
    v.state = &state;
    v.topology = &topology;
    if (with_spares) {
      v.spares_by_leaf = &spares;
      v.is_spare = &is_spare;
    }
    return v;
  }
  void Fail(int n) { state.SetHealthy(NodeId(static_cast<std::uint32_t>(n)), false); }

  Cluster cluster;
  RecoveryTopology topology;
  ClusterState state;
  std::vector<std::uint8_t> is_spare;
  std::vector<std::vector<NodeId>> spares;
};

RecoveryDecision Decide(std::string_view policy, const RecoveryRequest& req, const RecoveryView& v,
                        RecoveryConfig config = {}) {
  auto p = MakeRecoveryPolicy(policy, config);
  EXPECT_TRUE(p) << (p ? "" : p.error().message);
  return (*p)->Decide(req, v);
}

TEST(RecoveryTopologyTest, FlatClusterGetsLeavesOf32AndSpinesOf16Leaves) {
  // 2,100 nodes / 32 = 65 full leaves + one of 20 → 66 leaves; leaf 17 is in spine 17/16 = 1.
  Cluster c = Nodes(2100);
  RecoveryTopology t = BuildRecoveryTopology(c);
  EXPECT_EQ(t.leaf_count(), 66);
  EXPECT_EQ(t.leaf_nodes.back().size(), 20U);
  EXPECT_EQ(t.leaf(NodeId(2099)), 65U);
  EXPECT_EQ(t.spine_of_leaf[17], 1U);
  EXPECT_EQ(t.leaf_names[3], "leaf-3");
  EXPECT_EQ(t.DomainOf(c, NodeId(40), "leaf"), 1U);
  EXPECT_EQ(t.DomainOf(c, NodeId(40), "rack"), std::nullopt);  // no such level: no constraint
}

TEST(RecoveryTopologyTest, UsesTheClustersOwnLevels) {
  // 4 nodes: spine-0 holds leaf-0 (n0, n1) and leaf-1 (n2); spine-1 holds leaf-2 (n3).
  Cluster c;
  const std::vector<std::vector<std::uint32_t>> domains = {{0, 0}, {0, 0}, {0, 1}, {1, 2}};
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(c.AddNode("n" + std::to_string(i), "H100", 8, 64000, 1 << 20,
                          domains[static_cast<std::size_t>(i)]));
  }
  c.set_topology({{"spine", "leaf"}, {{"spine-0", "spine-1"}, {"leaf-0", "leaf-1", "leaf-2"}}});
  RecoveryTopology t = BuildRecoveryTopology(c);
  EXPECT_EQ(t.leaf_count(), 3);
  EXPECT_EQ(t.leaf(NodeId(2)), 1U);
  EXPECT_EQ(t.spine(NodeId(3)), 1U);
  EXPECT_EQ(t.leaf_names[2], "leaf-2");
  EXPECT_EQ(t.leaf_nodes[0].size(), 2U);
}

TEST(PlaceGangTest, FillsLeavesInOrderSkippingUnhealthyNodesAndSpares) {
  // 8 nodes, leaves of 4. Node 1 is down and node 3 a spare: a gang of 5 takes 0, 2, then
  // leaf 1's 4, 5, 6.
  Fixture f(8, 4, 1);
  f.Fail(1);
  f.Spare(3);
  auto p = PlaceGangOnLeaves(Gang(5), 5, f.state, f.View(true));
  ASSERT_TRUE(p);
  EXPECT_EQ(NodesOf(*p), (std::vector<int>{0, 2, 4, 5, 6}));
  EXPECT_FALSE(PlaceGangOnLeaves(Gang(7), 7, f.state, f.View(true)));  // 6 usable nodes
}

TEST(PlaceGangTest, RequiredLevelKeepsTheGangInOneDomain) {
  // Leaves of 4, one leaf per spine: spine 0 = nodes 0-3, spine 1 = nodes 4-7. Node 1 is down,
  // so spine 0 has 3 usable nodes: a gang of 3 fits there, a gang of 4 only in spine 1.
  Fixture f(8, 4, 1);
  f.Fail(1);
  auto three = PlaceGangOnLeaves(Gang(3, "spine"), 3, f.state, f.View());
  ASSERT_TRUE(three);
  EXPECT_EQ(NodesOf(*three), (std::vector<int>{0, 2, 3}));
  auto four = PlaceGangOnLeaves(Gang(4, "spine"), 4, f.state, f.View());
  ASSERT_TRUE(four);
  EXPECT_EQ(NodesOf(*four), (std::vector<int>{4, 5, 6, 7}));
}

TEST(RequeuePolicyTest, PlacesTheWholeGangAgainCountingItsOwnNodesAsFree) {
  // Gang on 0-3, node 2 fails. Its own healthy nodes 0, 1, 3 are free again for the requeue,
  // so the gang lands on 0, 1, 3, 4.
  Fixture f(8, 4, 2);
  const Workload w = Gang(4);
  RecoveryRequest req{&w, On(f.state, {0, 1, 2, 3}), {2}, 4};
  f.Fail(2);
  const RecoveryDecision d = Decide("requeue", req, f.View());
  EXPECT_EQ(d.kind, RecoveryDecision::Kind::kRequeue);
  EXPECT_EQ(NodesOf(d.placement), (std::vector<int>{0, 1, 3, 4}));
}

TEST(RequeuePolicyTest, WaitsWhenTheGangNoLongerFits) {
  // 4 nodes, gang of 4, one fails: 3 usable nodes for 4 workers.
  Fixture f(4, 4, 1);
  const Workload w = Gang(4);
  RecoveryRequest req{&w, On(f.state, {0, 1, 2, 3}), {1}, 4};
  f.Fail(1);
  EXPECT_EQ(Decide("requeue", req, f.View()).kind, RecoveryDecision::Kind::kWait);
}

TEST(ReplacePolicyTest, PrefersTheSameLeafThenTheSameSpine) {
  // Leaves of 4, two leaves per spine: spine 0 = leaves 0-1 (nodes 0-7), spine 1 = leaf 2-3.
  // Gang on 0, 1, 2, 4, 5; node 3 and 6, 7 free.
  Fixture f(16, 4, 2);
  const Workload w = Gang(5);
  RecoveryRequest req{&w, On(f.state, {0, 1, 2, 4, 5}), {1, 3}, 5};
  f.Fail(1);
  f.Fail(4);
  const RecoveryDecision d = Decide("replace", req, f.View());
  ASSERT_EQ(d.kind, RecoveryDecision::Kind::kReplace);
  // Rank 1 (node 1, leaf 0) → node 3, the free node of its leaf. Rank 3 (node 4, leaf 1) →
  // node 6, the lowest free node of its own leaf.
  EXPECT_EQ(NodesOf(d.placement), (std::vector<int>{0, 3, 2, 6, 5}));
  EXPECT_EQ(d.replaced_ranks, (std::vector<int>{1, 3}));
  EXPECT_EQ(d.spares_used, 0);
}

TEST(ReplacePolicyTest, GoesToAnotherSpineOnlyWhenItsOwnIsFull) {
  // Spine 0 (nodes 0-7) is full with the gang; node 5 fails → the first node of spine 1: 8.
  Fixture f(16, 4, 2);
  const Workload w = Gang(8);
  RecoveryRequest req{&w, On(f.state, {0, 1, 2, 3, 4, 5, 6, 7}), {5}, 8};
  f.Fail(5);
  const RecoveryDecision d = Decide("replace", req, f.View());
  ASSERT_EQ(d.kind, RecoveryDecision::Kind::kReplace);
  EXPECT_EQ(d.placement[5].node, NodeId(8));
  EXPECT_NE(d.reason.find("1 off-leaf"), std::string::npos) << d.reason;
}

TEST(ReplacePolicyTest, HonoursTheRequiredDomainAndElseMovesTheGang) {
  // The gang requires one spine (leaves of 4, one leaf per spine). Spine 0 = nodes 0-3 is full;
  // node 2 fails. Replacing in spine 1 would split the gang, so replace requeues it whole into
  // spine 1 (4-7) instead; with spine 1 busy too, it waits.
  Fixture f(8, 4, 1);
  const Workload w = Gang(4, "spine");
  RecoveryRequest req{&w, On(f.state, {0, 1, 2, 3}), {2}, 4};
  f.Fail(2);
  const RecoveryDecision moved = Decide("replace", req, f.View());
  EXPECT_EQ(moved.kind, RecoveryDecision::Kind::kRequeue);
  EXPECT_EQ(NodesOf(moved.placement), (std::vector<int>{4, 5, 6, 7}));
  On(f.state, {4});  // someone else takes node 4
  EXPECT_EQ(Decide("replace", req, f.View()).kind, RecoveryDecision::Kind::kWait);
}

TEST(SparesPolicyTest, TakesAHotSpareFirstAndReplaceNeverDoes) {
  // Leaves of 4: gang on 0-2, node 3 is a hot spare in the same leaf, nodes 4-7 free.
  Fixture f(8, 4, 2);
  f.Spare(3);
  const Workload w = Gang(3);
  RecoveryRequest req{&w, On(f.state, {0, 1, 2}), {1}, 3};
  f.Fail(1);
  const RecoveryDecision spares = Decide("spares", req, f.View(true));
  ASSERT_EQ(spares.kind, RecoveryDecision::Kind::kReplace);
  EXPECT_EQ(spares.placement[1].node, NodeId(3));
  EXPECT_EQ(spares.spares_used, 1);
  // replace sees the same pool but leaves it alone: node 4, a cold node of the next leaf.
  const RecoveryDecision replace = Decide("replace", req, f.View(true));
  EXPECT_EQ(replace.placement[1].node, NodeId(4));
  EXPECT_EQ(replace.spares_used, 0);
}

TEST(SparesPolicyTest, FallsBackToAColdNodeWhenThePoolIsEmpty) {
  // Two failed ranks, one spare (node 3): rank 0 gets the spare, rank 1 the free node 4.
  Fixture f(8, 4, 2);
  f.Spare(3);
  const Workload w = Gang(3);
  RecoveryRequest req{&w, On(f.state, {0, 1, 2}), {0, 1}, 3};
  f.Fail(0);
  f.Fail(1);
  const RecoveryDecision d = Decide("spares", req, f.View(true));
  EXPECT_EQ(NodesOf(d.placement), (std::vector<int>{3, 4, 2}));
  EXPECT_EQ(d.spares_used, 1);
}

TEST(RecoveryPolicyTest, ACrashWithNoFailedNodeRestartsInPlaceExceptUnderRequeue) {
  Fixture f(8, 4, 2);
  const Workload w = Gang(3);
  RecoveryRequest req{&w, On(f.state, {0, 1, 2}), {}, 3};
  for (const char* name : {"replace", "spares", "shrink"}) {
    const RecoveryDecision d = Decide(name, req, f.View(true));
    EXPECT_EQ(d.kind, RecoveryDecision::Kind::kReplace) << name;
    EXPECT_TRUE(d.replaced_ranks.empty()) << name;
    EXPECT_EQ(NodesOf(d.placement), (std::vector<int>{0, 1, 2})) << name;
  }
  // requeue restarts the whole gang through the queue; it lands where it was.
  const RecoveryDecision d = Decide("requeue", req, f.View());
  EXPECT_EQ(d.kind, RecoveryDecision::Kind::kRequeue);
  EXPECT_EQ(NodesOf(d.placement), (std::vector<int>{0, 1, 2}));
}

TEST(ShrinkPolicyTest, KeepsWholeReplicasOfTheSurvivors) {
  // 8 workers in replicas of 2; rank 3 fails. 7 survivors make 3 whole replicas = 6 workers:
  // the first six survivors in rank order, ranks 0, 1, 2, 4, 5, 6 (nodes likewise).
  Fixture f(16, 4, 2);
  const Workload w = Gang(8);
  RecoveryRequest req{&w, On(f.state, {0, 1, 2, 3, 4, 5, 6, 7}), {3}, 8};
  f.Fail(3);
  const RecoveryDecision d = Decide("shrink", req, f.View(), {.shrink_unit = 2});
  ASSERT_EQ(d.kind, RecoveryDecision::Kind::kResize);
  EXPECT_EQ(NodesOf(d.placement), (std::vector<int>{0, 1, 2, 4, 5, 6}));
}

TEST(ShrinkPolicyTest, BelowTheMinimumItReplacesInstead) {
  // Replicas of 4, minimum 8: losing one of 8 workers leaves 1 replica (4 < 8) → replace.
  Fixture f(16, 4, 2);
  const Workload w = Gang(8);
  RecoveryRequest req{&w, On(f.state, {0, 1, 2, 3, 4, 5, 6, 7}), {6}, 8};
  f.Fail(6);
  const RecoveryDecision d = Decide("shrink", req, f.View(), {.shrink_unit = 4, .min_workers = 8});
  EXPECT_EQ(d.kind, RecoveryDecision::Kind::kReplace);
  EXPECT_EQ(d.placement[6].node, NodeId(8));  // spine 0 is full; first node of spine 1
}

TEST(ShrinkPolicyTest, GrowsBackInWholeReplicasWhenNodesAreFree) {
  // Running 4 of 8 workers (replicas of 2) on nodes 0-3 of an 8-node cluster where nodes 4-7
  // are busy except 4 and 5: two free nodes = one replica → grow to 6. With only node 4
  // free, half a replica → no grow.
  Fixture f(8, 4, 2);
  const Workload w = Gang(8);
  RecoveryRequest req{&w, On(f.state, {0, 1, 2, 3}), {}, 8};
  On(f.state, {6, 7});
  auto p = MakeRecoveryPolicy("shrink", {.shrink_unit = 2});
  ASSERT_TRUE(p);
  auto grow = (*p)->Grow(req, f.View());
  ASSERT_TRUE(grow);
  EXPECT_EQ(grow->kind, RecoveryDecision::Kind::kResize);
  EXPECT_EQ(NodesOf(grow->placement), (std::vector<int>{0, 1, 2, 3, 4, 5}));
  On(f.state, {5});
  EXPECT_FALSE((*p)->Grow(req, f.View()));
  // The other policies never grow.
  auto replace = MakeRecoveryPolicy("replace", {});
  EXPECT_FALSE((*replace)->Grow(req, f.View()));
}

TEST(DrainRuleTest, CountsFailuresInsideTheWindow) {
  const DrainRule rule{2, 7 * kDay};
  // Failures at day 0 and day 6: both within (6 − 7, 6] days → drain.
  EXPECT_TRUE(rule.ShouldDrain({0, 6 * kDay}, 6 * kDay));
  // Day 0 and day 8: day 0 is outside (1, 8] → one failure in the window → keep.
  EXPECT_FALSE(rule.ShouldDrain({0, 8 * kDay}, 8 * kDay));
  EXPECT_FALSE(rule.ShouldDrain({5 * kDay}, 5 * kDay));
  EXPECT_FALSE((DrainRule{0, 7 * kDay}.ShouldDrain({0, 1, 2}, 2)));  // threshold 0: never
}

TEST(RecoveryRegistryTest, NamesAndErrors) {
  EXPECT_EQ(RecoveryPolicyNames(),
            (std::vector<std::string>{"requeue", "replace", "spares", "shrink"}));
  for (const auto& n : RecoveryPolicyNames()) {
    auto p = MakeRecoveryPolicy(n, {});
    ASSERT_TRUE(p) << n;
    EXPECT_EQ((*p)->name(), n);
    EXPECT_EQ((*p)->uses_spares(), n == "spares");
  }
  auto unknown = MakeRecoveryPolicy("pray", {});
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("'pray' is unknown"), std::string::npos);
  EXPECT_FALSE(MakeRecoveryPolicy("shrink", {.shrink_unit = 0}));
}

}  // namespace
}  // namespace tessera
