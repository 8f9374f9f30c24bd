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

// The expected integers follow the FGD authors' simulator (hkust-adsl/
// kubernetes-scheduler-simulator, pkg/simulator/plugin/*_score.go): scores 0-100, truncated.
TEST_F(PolicyTest, BestFitLeftover) {
  ClusterState s(cluster_);
  TaskShape t{8000, 0, 1, 1000};
  // big: leftover = 0.5·(128−8)/128 + 0.5·(8000−1000)/8000 = 0.90625 → int(9.375) = 9
  EXPECT_DOUBLE_EQ(Score("bestfit", s, 0, t).score, 9);
  // small: leftover = 0.5·(64−8)/128 + 0.5·(2000−1000)/8000 = 0.28125 → int(71.875) = 71
  EXPECT_DOUBLE_EQ(Score("bestfit", s, 1, t).score, 71);
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
  // big, empty: (128/128·16/128 + 8000/8000·2000/8000)/2 = (0.125 + 0.25)/2 = 0.1875
  //   → int(100·0.8125) = 81
  EXPECT_DOUBLE_EQ(Score("dotprod", s, 0, t).score, 81);
  // small, empty: (64/128·0.125 + 2000/8000·0.25)/2 = 0.0625 → int(93.75) = 93
  EXPECT_DOUBLE_EQ(Score("dotprod", s, 1, t).score, 93);
  // Memory is not a dimension: a task asking for all of small's memory scores the same.
  EXPECT_DOUBLE_EQ(Score("dotprod", s, 1, TaskShape{16000, 256 * 1024, 2, 1000}).score, 93);
  // A share takes the tightest GPU that fits (the reference's "best" GPU choice).
  ASSERT_TRUE(s.Apply({TaskPlacement{NodeId(0), 0b1000, 600, 0, 0}}));
  EXPECT_EQ(Score("dotprod", s, 0, TaskShape{0, 0, 1, 300}).gpu_mask, 0b1000);
}

TEST_F(PolicyTest, PackingTiers) {
  ClusterState s(cluster_);
  TaskShape share{0, 0, 1, 200};
  // Idle nodes: max(33 − GPUs, GPUs): big 25, small 31 (the smaller idle node first).
  EXPECT_DOUBLE_EQ(Score("packing", s, 0, share).score, 25);
  EXPECT_DOUBLE_EQ(Score("packing", s, 1, share).score, 31);
  ASSERT_TRUE(s.Apply({TaskPlacement{NodeId(0), 0b1, 500, 0, 0}}));
  // GPU 0 shared with 500 free: 100 − ⌊⌊500·100/1000⌋/10⌋ = 95, on GPU 0.
  auto shared = Score("packing", s, 0, share);
  EXPECT_DOUBLE_EQ(shared.score, 95);
  EXPECT_EQ(shared.gpu_mask, 0b1);
  // A share that does not fit the used GPU takes a free one on the node in use: 50 − 1.
  EXPECT_DOUBLE_EQ(Score("packing", s, 0, TaskShape{0, 0, 1, 600}).score, 49);
  // Whole GPUs on the node in use: 50 − 1 for one, max(50 − 7, 33) = 43 for seven.
  EXPECT_DOUBLE_EQ(Score("packing", s, 0, TaskShape{0, 0, 1, 1000}).score, 49);
  EXPECT_DOUBLE_EQ(Score("packing", s, 0, TaskShape{0, 0, 7, 1000}).score, 43);
  // CPU-only tasks score 0 everywhere.
  EXPECT_DOUBLE_EQ(Score("packing", s, 0, TaskShape{4000, 0, 0, 0}).score, 0);
}

TEST_F(PolicyTest, ClusteringTiers) {
  ClusterState s(cluster_);
  TaskShape share{0, 0, 1, 500};
  // Idle big: 25 + 25·(8000 − 8000)/8000 = 25. Idle small looks fuller: 25 + ⌊25·6000/8000⌋ = 43.
  EXPECT_DOUBLE_EQ(Score("clustering", s, 0, share).score, 25);
  EXPECT_DOUBLE_EQ(Score("clustering", s, 1, share).score, 43);
  ASSERT_TRUE(s.Apply({TaskPlacement{NodeId(0), 0b1, 500, 0, 0}}));
  // Only shares on it: 75 + ⌊25·500/8000⌋ = 76. Another share size has the same tag.
  EXPECT_DOUBLE_EQ(Score("clustering", s, 0, share).score, 76);
  EXPECT_DOUBLE_EQ(Score("clustering", s, 0, TaskShape{0, 0, 1, 300}).score, 76);
  ASSERT_TRUE(s.Apply({TaskPlacement{NodeId(0), 0b10, 1000, 0, 0}}));  // a 1-GPU task
  // share among 1-gpu: 50 + ⌊25·1500/8000⌋ = 54; a 2-GPU task finds no "2-gpu": 0 + 4.
  EXPECT_DOUBLE_EQ(Score("clustering", s, 0, share).score, 54);
  EXPECT_DOUBLE_EQ(Score("clustering", s, 0, TaskShape{0, 0, 2, 1000}).score, 4);
  // CPU-only tasks score 0 everywhere.
  EXPECT_DOUBLE_EQ(Score("clustering", s, 1, TaskShape{4000, 0, 0, 0}).score, 0);
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
  // A 300-milli share on GPU 0: F after = 100, decrease 300 → int(100·σ(0.3)) = int(57.44) = 57.
  // On a free GPU instead: F after = 400 + 700 = 1100, decrease −700 → int(33.18) = 33.
  auto score = Score("fgd", s, 0, TaskShape{0, 0, 1, 300}, config);
  EXPECT_EQ(score.gpu_mask, 0b1);
  EXPECT_DOUBLE_EQ(score.score, 57);
  // A whole GPU: F stays 400 (free GPUs remain usable), decrease 0 → σ(0) = 0.5 → 50.
  EXPECT_DOUBLE_EQ(Score("fgd", s, 0, TaskShape{0, 0, 1, 1000}, config).score, 50);
  // exact_scores: the decrease itself.
  config.exact_scores = true;
  EXPECT_DOUBLE_EQ(Score("fgd", s, 0, TaskShape{0, 0, 1, 300}, config).score, 300);
  EXPECT_DOUBLE_EQ(Score("fgd", s, 0, TaskShape{0, 0, 1, 1000}, config).score, 0);
}

TEST_F(PolicyTest, FgdRenormalisesTheKeptShapes) {
  // 90 whole-GPU tasks and 10 CPU-only ones; a 90% cut keeps only the whole-GPU shape, whose
  // p becomes 90/90 = 1 (not 90/100): the share's decrease is 300 milli → 57, not
  // int(100·σ(0.27)) = 56.
  PlacementConfig config;
  config.target_workload =
      TargetWorkload::FromTasks({{TaskShape{0, 0, 1, 1000}, GpuModelSet::Any(), 90},
                                 {TaskShape{1000, 0, 0, 0}, GpuModelSet::Any(), 10}},
                                0.9);
  ASSERT_EQ(config.target_workload.shapes.size(), 1U);
  ClusterState s(cluster_);
  ASSERT_TRUE(s.Apply({TaskPlacement{NodeId(0), 0b1, 600, 0, 0}}));
  EXPECT_DOUBLE_EQ(Score("fgd", s, 0, TaskShape{0, 0, 1, 300}, config).score, 57);
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
