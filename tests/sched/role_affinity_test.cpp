// RLJob role affinity, worked by hand on two leaves of two 8-GPU nodes:
//
//   leaf 0 = n0 n1    leaf 1 = n2 n3
//
// The RLJob has a trainer (1 × 8 GPUs), a rollout (2 × 2 GPUs) that must share a leaf with the
// trainer, and a reference (1 × 4 GPUs) that must share a node with the trainer — which can
// never be (8 + 4 > 8 GPUs on a node), so it is refused; with the reference on the trainer's
// leaf it fits: 8 + 4 + 4 = 16 GPUs, exactly one leaf.
#include "sched/placement/role_affinity.h"

#include <gtest/gtest.h>

#include "sched/placement/task_placer.h"
#include "sched/placement/topology_gang_placer.h"
#include "sched/scheduler.h"

namespace tessera {
namespace {

Cluster TwoLeaves() {
  Cluster c;
  for (std::uint32_t i = 0; i < 4; ++i) {
    EXPECT_TRUE(c.AddNode("n" + std::to_string(i), "H100", 8, 64000, 1 << 20, {0, i / 2}));
  }
  c.set_topology(Topology{{"spine", "leaf"}, {{"spine-0"}, {"leaf-0", "leaf-1"}}});
  return c;
}

Workload RlJob(const std::string& reference_level) {
  Workload w;
  w.id = JobId(0);
  w.name = "ppo";
  w.kind = WorkloadKind::kRL;
  w.groups.push_back({"trainer", 1, TaskShape{0, 0, 8, 1000}, {}});
  w.groups.push_back({"rollout", 2, TaskShape{0, 0, 2, 1000}, {{"trainer", "leaf"}}});
  w.groups.push_back({"reference", 1, TaskShape{0, 0, 4, 1000}, {{"trainer", reference_level}}});
  return w;
}

TEST(RoleAffinityTest, RefusesAffinitiesThatCanNeverHold) {
  Cluster c = TwoLeaves();
  auto why = NeverFitsReason(c, RlJob("node"));
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("roles.reference.affinity.trainer"), std::string::npos) << *why;
  auto level = NeverFitsReason(c, RlJob("rack"));
  ASSERT_TRUE(level);
  EXPECT_NE(level->find("rack"), std::string::npos) << *level;
  Workload bad = RlJob("leaf");
  bad.groups[1].affinity = {{"critic", "leaf"}};
  auto role = NeverFitsReason(c, bad);
  ASSERT_TRUE(role);
  EXPECT_NE(role->find("critic"), std::string::npos) << *role;
  EXPECT_FALSE(NeverFitsReason(c, RlJob("leaf")));
}

TEST(RoleAffinityTest, AllRolesTogetherOrNothingWithAffinity) {
  // n1 and n2 are busy: leaf 0 has n0 (8 free), leaf 1 has n3 (8 free). 16 GPUs are free, as
  // many as the job needs, but in two leaves: a placement on n0 + n3 would break the
  // affinities, so the job waits and nothing is taken.
  Cluster c = TwoLeaves();
  ClusterState state(c);
  ASSERT_TRUE(state.Apply({TaskPlacement{NodeId(1), 0xFF, 1000, 0, 0}}));
  ASSERT_TRUE(state.Apply({TaskPlacement{NodeId(2), 0xFF, 1000, 0, 0}}));
  auto policy = MakePlacementPolicy("bestfit", {});
  ASSERT_TRUE(policy);
  const TopologyTree tree = TopologyTree::Build(c);
  TopologyGangPlacer gangs(**policy, tree);
  TaskPlacer placer(**policy, nullptr, &gangs);
  Rng rng(1);
  Workload job = RlJob("leaf");
  EXPECT_FALSE(placer.PlaceGang(state, job, rng));
  EXPECT_EQ(state.free_gpu_milli(), 16000);
  // Free n1 and n2: leaf 0 is whole, and the job goes there with every affinity holding.
  state.Release({TaskPlacement{NodeId(1), 0xFF, 1000, 0, 0}});
  state.Release({TaskPlacement{NodeId(2), 0xFF, 1000, 0, 0}});
  auto p = placer.PlaceGang(state, job, rng);
  ASSERT_TRUE(p);
  EXPECT_TRUE(RoleAffinityHolds(c, job, *p));
  // Trainer (rank 0) and rollouts (ranks 1, 2) and reference (rank 3) all in one leaf.
  const auto leaf = [&](int rank) {
    return c.node((*p)[static_cast<std::size_t>(rank)].node).domain[1];
  };
  EXPECT_EQ(leaf(1), leaf(0));
  EXPECT_EQ(leaf(2), leaf(0));
  EXPECT_EQ(leaf(3), leaf(0));
}

TEST(RoleAffinityTest, ReplacesAGangThatBrokeAnAffinity) {
  // A placement across leaves breaks "rollout with trainer in one leaf".
  Cluster c = TwoLeaves();
  Workload job = RlJob("leaf");
  Placement across = {
      TaskPlacement{NodeId(0), 0xFF, 1000, 0, 0}, TaskPlacement{NodeId(2), 0xF, 1000, 0, 0},
      TaskPlacement{NodeId(2), 0xF0, 1000, 0, 0}, TaskPlacement{NodeId(1), 0xF, 1000, 0, 0}};
  EXPECT_FALSE(RoleAffinityHolds(c, job, across));
  Placement inside = across;
  inside[1].node = NodeId(1);
  inside[1].gpu_mask = 0xF0;
  inside[2].node = NodeId(0);  // not a real placement (n0 is full), only the span is checked
  EXPECT_TRUE(RoleAffinityHolds(c, job, inside));
  EXPECT_EQ(TightestAffinityLevel(c, job), "leaf");
}

}  // namespace
}  // namespace tessera
