// ClusterState is the only place allocation happens: it must never over-allocate a GPU, CPU
// or memory, must apply gangs all-or-nothing, and must return everything on release.
#include "core/cluster_state.h"

#include <gtest/gtest.h>

#include "core/rng.h"

namespace tessera {
namespace {

Cluster TwoNodes() {
  Cluster c;
  EXPECT_TRUE(c.AddNode("a", "H100", 4, 64000, 512 * 1024));
  EXPECT_TRUE(c.AddNode("b", "A100", 2, 32000, 256 * 1024));
  return c;
}

TEST(ClusterStateTest, StartsEmpty) {
  Cluster c = TwoNodes();
  ClusterState s(c);
  EXPECT_EQ(s.allocated_gpu_milli(), 0);
  EXPECT_EQ(s.healthy_gpu_milli(), 6000);
  EXPECT_EQ(s.free_gpu_milli(), 6000);
  EXPECT_EQ(s.node(NodeId(0)).FullyFreeGpus(4), 4);
}

TEST(ClusterStateTest, SharesAddUpToOneGpu) {
  Cluster c = TwoNodes();
  ClusterState s(c);
  TaskPlacement half{NodeId(1), 0b01, 500, 1000, 1024};
  TaskPlacement other{NodeId(1), 0b01, 500, 1000, 1024};
  ASSERT_TRUE(s.Apply({half}));
  ASSERT_TRUE(s.Apply({other}));
  EXPECT_EQ(s.node(NodeId(1)).gpu_free[0], 0);
  // A third share of the same GPU would over-allocate it.
  EXPECT_FALSE(s.Apply({TaskPlacement{NodeId(1), 0b01, 1, 0, 0}}));
  EXPECT_EQ(s.allocated_gpu_milli(), 1000);
}

TEST(ClusterStateTest, GangIsAllOrNothing) {
  Cluster c = TwoNodes();
  ClusterState s(c);
  // Second task asks for GPU 2 of node b, which has only GPUs 0 and 1.
  Placement gang = {TaskPlacement{NodeId(0), 0b1111, 1000, 0, 0},
                    TaskPlacement{NodeId(1), 0b100, 1000, 0, 0}};
  EXPECT_FALSE(s.Apply(gang));
  EXPECT_EQ(s.allocated_gpu_milli(), 0);
  EXPECT_EQ(s.node(NodeId(0)).FullyFreeGpus(4), 4);
  // Two tasks of one gang may not take the same GPU twice.
  Placement twice = {TaskPlacement{NodeId(1), 0b01, 1000, 0, 0},
                     TaskPlacement{NodeId(1), 0b01, 1000, 0, 0}};
  EXPECT_FALSE(s.Apply(twice));
  EXPECT_EQ(s.allocated_gpu_milli(), 0);
}

TEST(ClusterStateTest, CpuAndMemoryBind) {
  Cluster c = TwoNodes();
  ClusterState s(c);
  EXPECT_FALSE(s.Apply({TaskPlacement{NodeId(1), 0, 0, 32001, 0}}));
  EXPECT_FALSE(s.Apply({TaskPlacement{NodeId(1), 0, 0, 0, 256 * 1024 + 1}}));
  EXPECT_TRUE(s.Apply({TaskPlacement{NodeId(1), 0, 0, 32000, 256 * 1024}}));
}

TEST(ClusterStateTest, UnhealthyNodeTakesNothing) {
  Cluster c = TwoNodes();
  ClusterState s(c);
  s.SetHealthy(NodeId(0), false);
  EXPECT_EQ(s.healthy_gpu_milli(), 2000);
  EXPECT_FALSE(s.Apply({TaskPlacement{NodeId(0), 0b1, 1000, 0, 0}}));
}

// Property: random applies and releases never over-allocate, and releasing everything
// restores the empty state exactly.
TEST(ClusterStateTest, RandomApplyReleaseNeverOverAllocates) {
  Cluster c = TwoNodes();
  ClusterState s(c);
  Rng rng(7);
  std::vector<Placement> live;
  for (int step = 0; step < 5000; ++step) {
    if (!live.empty() && rng.Uniform(3) == 0) {
      const auto i = rng.Uniform(live.size());
      s.Release(live[i]);
      live.erase(live.begin() + static_cast<long>(i));
    } else {
      const NodeId node(static_cast<std::uint32_t>(rng.Uniform(2)));
      const int gpus = c.node(node).gpu_count;
      Placement p = {TaskPlacement{node, static_cast<std::uint16_t>(1U << rng.Uniform(gpus)),
                                   static_cast<std::int32_t>(1 + rng.Uniform(1000)),
                                   static_cast<std::int64_t>(rng.Uniform(8000)),
                                   static_cast<std::int64_t>(rng.Uniform(65536))}};
      if (s.Apply(p)) live.push_back(p);
    }
    for (const auto& n : c.nodes()) {
      const auto& st = s.node(n.id);
      ASSERT_GE(st.free.cpu_milli, 0);
      ASSERT_GE(st.free.memory_mib, 0);
      for (int g = 0; g < n.gpu_count; ++g) {
        ASSERT_GE(st.gpu_free[g], 0);
        ASSERT_LE(st.gpu_free[g], 1000);
      }
    }
  }
  for (const auto& p : live) s.Release(p);
  EXPECT_EQ(s.allocated_gpu_milli(), 0);
  for (const auto& n : c.nodes()) {
    EXPECT_EQ(s.node(n.id).free, n.capacity);
    EXPECT_TRUE(s.gpu_affinities(n.id).empty());
  }
}

}  // namespace
}  // namespace tessera
