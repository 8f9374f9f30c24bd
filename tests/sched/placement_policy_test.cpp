// Each placement policy's score, with the arithmetic worked out in the comments.
#include "sched/placement/placement_policy.h"

#include <gtest/gtest.h>

#include <set>

namespace tessera {
namespace {

// Node 0: 8 GPUs, 128 cores, 1 TiB. Node 1: 2 GPUs, 64 cores, 256 GiB.
class PolicyTest : public ::testing::Test {
 protected:
  PolicyTest() {
    EXPECT_TRUE(cluster_.AddNode("big", "G2", 8, 128000, 1024 * 1024));
    EXPECT_TRUE(cluster_.AddNode("small", "T4", 2, 64000, 256 * 1024));
  }
  NodeScore Score(const std::string& policy, const ClusterState& s, int node, TaskShape shape,
                  PlacementConfig config = {}) {
    auto p = MakePlacementPolicy(policy, config);
    EXPECT_TRUE(p) << policy;
    Rng rng(1);
    return (*p)->Score(s, NodeId(static_cast<std::uint32_t>(node)), shape, rng);
  }
  Cluster cluster_;
};

TEST_F(PolicyTest, UnknownPolicyIsAnErrorNamingTheKnownOnes) {
  auto p = MakePlacementPolicy("nope", {});
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("fgd"), std::string::npos);
}

TEST_F(PolicyTest, BestFitLeftover) {
  ClusterState s(cluster_);
  TaskShape t{8000, 0, 1, 1000};
  // big: leftover = 0.5·(128−8)/128 + 0.5·(8000−1000)/8000 = 0.46875 + 0.4375 = 0.90625
  EXPECT_DOUBLE_EQ(Score("bestfit", s, 0, t).score, -0.90625);
  // small: leftover = 0.5·(64−8)/128 + 0.5·(2000−1000)/8000 = 0.21875 + 0.0625 = 0.28125
  EXPECT_DOUBLE_EQ(Score("bestfit", s, 1, t).score, -0.28125);
}

TEST_F(PolicyTest, BestFitSharePicksTightestGpu) {
  ClusterState s(cluster_);
  ASSERT_TRUE(s.Apply({TaskPlacement{NodeId(0), 0b100, 700, 0, 0}}));  // GPU 2 has 300 free
  ASSERT_TRUE(s.Apply({TaskPlacement{NodeId(0), 0b010, 400, 0, 0}}));  // GPU 1 has 600 free
  // A 250-milli share fits on GPU 2 (300 free), the tightest.
  EXPECT_EQ(Score("bestfit", s, 0, TaskShape{0, 0, 1, 250}).gpu_mask, 0b100);
  // A 500-milli share does not fit GPU 2; GPU 1 (600 free) is the tightest that fits.
  EXPECT_EQ(Score("bestfit", s, 0, TaskShape{0, 0, 1, 500}).gpu_mask, 0b010);
}

TEST_F(PolicyTest, DotProduct) {
  ClusterState s(cluster_);
  TaskShape t{16000, 0, 2, 1000};
  // big, empty: cpu 1·(16/128) = 0.125; mem 1·0 = 0; gpu 1·(2000/8000) = 0.25 → −0.375
  EXPECT_DOUBLE_EQ(Score("dotprod", s, 0, t).score, -0.375);
  // small, empty: cpu 1·(16/64) = 0.25; gpu 1·(2000/2000) = 1 → −1.25
  EXPECT_DOUBLE_EQ(Score("dotprod", s, 1, t).score, -1.25);
  // A share: GPU dimension is the chosen GPU: free 0.4 × request 0.3 = 0.12 is smaller than
  // a full GPU's 1 × 0.3, so the partly used GPU 3 wins.
  ASSERT_TRUE(s.Apply({TaskPlacement{NodeId(0), 0b1000, 600, 0, 0}}));
  auto share = Score("dotprod", s, 0, TaskShape{0, 0, 1, 300});
  EXPECT_EQ(share.gpu_mask, 0b1000);
  EXPECT_DOUBLE_EQ(share.score, -0.12);
}

TEST_F(PolicyTest, PackingTiers) {
  ClusterState s(cluster_);
  TaskShape share{0, 0, 1, 200};
  // Idle node: tier 1e6 − free 8000 = 992000.
  EXPECT_DOUBLE_EQ(Score("packing", s, 0, share).score, 992000);
  ASSERT_TRUE(s.Apply({TaskPlacement{NodeId(0), 0b1, 500, 0, 0}}));
  // GPU 0 shared with 500 free: tier 3e6 − 500 = 2999500, on GPU 0.
  auto shared = Score("packing", s, 0, share);
  EXPECT_DOUBLE_EQ(shared.score, 2999500);
  EXPECT_EQ(shared.gpu_mask, 0b1);
  // A whole GPU on the node in use: tier 2e6 − free 7500 = 1992500.
  EXPECT_DOUBLE_EQ(Score("packing", s, 0, TaskShape{0, 0, 1, 1000}).score, 1992500);
}

TEST_F(PolicyTest, ClusteringTiers) {
  ClusterState s(cluster_);
  TaskShape share{0, 0, 1, 500};
  // Idle: 2e6 − 8000.
  EXPECT_DOUBLE_EQ(Score("clustering", s, 0, share).score, 2e6 - 8000);
  ASSERT_TRUE(s.Apply({TaskPlacement{NodeId(0), 0b1, 500, 0, 0}}));
  // Only 500-milli tasks on it: 4e6 − 7500.
  EXPECT_DOUBLE_EQ(Score("clustering", s, 0, share).score, 4e6 - 7500);
  ASSERT_TRUE(s.Apply({TaskPlacement{NodeId(0), 0b10, 250, 0, 0}}));
  // 500 among others: 3e6 − 7250.
  EXPECT_DOUBLE_EQ(Score("clustering", s, 0, share).score, 3e6 - 7250);
  // A 300-milli task finds no equal size: the rest, 1e6 − 7250.
  EXPECT_DOUBLE_EQ(Score("clustering", s, 0, TaskShape{0, 0, 1, 300}).score, 1e6 - 7250);
}

TEST_F(PolicyTest, FirstFitPrefersLowIndex) {
  ClusterState s(cluster_);
  EXPECT_GT(Score("firstfit", s, 0, TaskShape{0, 0, 1, 1000}).score,
            Score("firstfit", s, 1, TaskShape{0, 0, 1, 1000}).score);
}

TEST_F(PolicyTest, FgdPicksGpuThatFragmentsLeast) {
  // Target workload: only whole-GPU tasks of 1 GPU, any model (p = 1, total = 1).
  PlacementConfig config;
  WorkloadShape whole{TaskShape{0, 0, 1, 1000}, GpuModelSet::Any(), 1};
  config.target_workload = TargetWorkload::FromTasks({whole}, 1.0);
  ClusterState s(cluster_);
  ASSERT_TRUE(s.Apply({TaskPlacement{NodeId(0), 0b1, 600, 0, 0}}));  // GPU 0: 400 free
  // F before on big: GPU 0's 400 free milli cannot hold a whole GPU → F = 400.
  // A 300-milli share on GPU 0: F after = 100, ΔF = −300 → score 300.
  // On a free GPU instead: F after = 400 + 700 = 1100, ΔF = +700 → score −700.
  auto score = Score("fgd", s, 0, TaskShape{0, 0, 1, 300}, config);
  EXPECT_EQ(score.gpu_mask, 0b1);
  EXPECT_DOUBLE_EQ(score.score, 300);
  // A whole GPU: F stays 400 (free GPUs remain usable) → ΔF = 0.
  EXPECT_DOUBLE_EQ(Score("fgd", s, 0, TaskShape{0, 0, 1, 1000}, config).score, 0);
}

TEST_F(PolicyTest, RandomPolicyDrawsGpusFromTheSeed) {
  ClusterState s(cluster_);
  auto p = MakePlacementPolicy("random", {});
  ASSERT_TRUE(p);
  // Every node scores the same; the GPU of a share is drawn for the chosen node only.
  Rng a(3), b(3);
  const TaskShape share{0, 0, 1, 100};
  EXPECT_EQ((*p)->Score(s, NodeId(0), share, a).score, (*p)->Score(s, NodeId(1), share, a).score);
  std::set<std::uint16_t> seen;
  for (int i = 0; i < 50; ++i) {
    const auto score = (*p)->Score(s, NodeId(0), share, a);
    const auto mask = (*p)->FinalGpus(s, NodeId(0), share, score, a);
    EXPECT_EQ(mask, (*p)->FinalGpus(s, NodeId(0), share, score, b));
    seen.insert(mask);
  }
  EXPECT_GT(seen.size(), 3U);  // spread over the 8 GPUs
}

}  // namespace
}  // namespace tessera
