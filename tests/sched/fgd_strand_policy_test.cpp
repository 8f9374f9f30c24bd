// fgd-strand's scoring arithmetic (src/sched/placement/fgd_strand_policy.cpp), with every
// expected score worked out in the comments. Notation: G = Σ_m count_m·(4·F(m) + S(m)),
// F = FGD's fragment, S = GPU milli stranded by CPU or memory, score = −ΔG − π·(task's GPU
// milli). See docs/beyond-fgd.md.
#include <gtest/gtest.h>

#include <algorithm>

#include "sched/placement/placement_policy.h"
#include "sched/placement/task_placer.h"

namespace tessera {
namespace {

// Node 0 "g2": 8 G2 GPUs, 32 cores, 256 GiB (few cores per GPU).
// Node 1 "t4": 2 T4 GPUs, 128 cores, 512 GiB (many cores per GPU).
class FgdStrandTest : public ::testing::Test {
 protected:
  FgdStrandTest() {
    EXPECT_TRUE(cluster_.AddNode("g2", "G2", 8, 32000, 256 * 1024));
    EXPECT_TRUE(cluster_.AddNode("t4", "T4", 2, 128000, 512 * 1024));
  }
  // A target workload of the given shapes (any model unless `models` is set).
  static PlacementConfig Target(const std::vector<WorkloadShape>& shapes) {
    PlacementConfig config;
    config.target_workload = TargetWorkload::FromTasks(shapes, 1.0);
    config.exact_scores = true;  // fgd's exact fragmentation decrease, which fgd-strand extends
    return config;
  }
  static WorkloadShape Shape(TaskShape t, std::int64_t count,
                             GpuModelSet models = GpuModelSet::Any()) {
    return WorkloadShape{t, models, count};
  }
  NodeScore Score(const std::string& policy, const ClusterState& s, int node, TaskShape shape,
                  const PlacementConfig& config) {
    auto p = MakePlacementPolicy(policy, config);
    EXPECT_TRUE(p) << policy;
    Rng rng(1);
    return (*p)->Score(s, NodeId(static_cast<std::uint32_t>(node)), shape, rng);
  }
  Cluster cluster_;
};

TEST_F(FgdStrandTest, RegisteredAndListedByName) {
  const auto names = PlacementPolicyNames();
  EXPECT_NE(std::find(names.begin(), names.end(), "fgd-strand"), names.end());
  auto p = MakePlacementPolicy("fgd-strand", {});
  ASSERT_TRUE(p);
  EXPECT_EQ((*p)->name(), "fgd-strand");
  EXPECT_TRUE((*p)->deterministic());
}

TEST_F(FgdStrandTest, WithoutCpuPressureItIsFourTimesFgd) {
  // Target: whole 1-GPU tasks that need no CPU (count 1, any model): nothing can strand.
  const auto config = Target({Shape({0, 0, 1, 1000}, 1)});
  ClusterState s(cluster_);
  ASSERT_TRUE(s.Apply({TaskPlacement{NodeId(0), 0b1, 600, 0, 0}}));  // GPU 0: 400 free
  // Before on g2: free 7400, usable (free ≥ 1000) 7000 → F = 400, S = 0 → G = 4·400 = 1600.
  // A 300-milli share on GPU 0: F = 100 → G = 400 → ΔG = −1200 → score 1200 = 4 × FGD's 300.
  // On a fully free GPU instead: F = 400 + 700 → G = 4400 → ΔG = +2800 → score −2800.
  const TaskShape share{0, 0, 1, 300};
  const auto score = Score("fgd-strand", s, 0, share, config);
  EXPECT_EQ(score.gpu_mask, 0b1);
  EXPECT_DOUBLE_EQ(score.score, 1200);
  EXPECT_DOUBLE_EQ(score.score, 4 * Score("fgd", s, 0, share, config).score);
  // A whole GPU: F stays 400 → 0, as FGD.
  EXPECT_DOUBLE_EQ(Score("fgd-strand", s, 0, TaskShape{0, 0, 1, 1000}, config).score, 0);
}

TEST_F(FgdStrandTest, CpuOnlyTaskGoesWhereItStrandsNoGpu) {
  // Target: whole 1-GPU tasks with 8 cores each (count 1).
  const auto config = Target({Shape({8000, 0, 1, 1000}, 1)});
  ClusterState s(cluster_);
  const TaskShape cpu_only{8000, 0, 0, 0};
  // g2: 8 free GPUs, but 32 cores feed only ⌊1000·32000/8000⌋ = 4000 milli of such tasks:
  //   S = 8000 − 4000 = 4000, F = 0 → G = 4000. After 8 more cores are taken: 24 cores feed
  //   3000 → S = 5000 → ΔG = +1000 → score −1000.
  EXPECT_DOUBLE_EQ(Score("fgd-strand", s, 0, cpu_only, config).score, -1000);
  // t4: 128 cores feed 16000 ≥ 2000 free → S = 0, and 120 cores still feed 15000 → ΔG = 0.
  EXPECT_DOUBLE_EQ(Score("fgd-strand", s, 1, cpu_only, config).score, 0);
  // FGD sees no difference: the shape still fits both nodes afterwards (a tie).
  EXPECT_DOUBLE_EQ(Score("fgd", s, 0, cpu_only, config).score, 0);
  EXPECT_DOUBLE_EQ(Score("fgd", s, 1, cpu_only, config).score, 0);
  // So the placer puts the CPU-only task on t4, whatever the seed.
  auto policy = MakePlacementPolicy("fgd-strand", config);
  ASSERT_TRUE(policy);
  TaskPlacer placer(**policy, nullptr);
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    Rng rng(seed);
    auto t = placer.Place(s, cpu_only, GpuModelSet::Any(), rng);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->node, NodeId(1));
  }
}

TEST_F(FgdStrandTest, StrandingCountsAsMuchAsFragmentWhenTheClusterIsShortOfCpu) {
  // The cluster has 160 cores for 10 GPUs, 16 per GPU. A target of 1-GPU tasks with 20 cores
  // each needs 20 per GPU: pressure 20/16 = 1.25 > 1.05, so a stranded milli counts as much as
  // a fragmented one (α = 1).
  const auto config = Target({Shape({20000, 0, 1, 1000}, 1)});
  ClusterState s(cluster_);
  const TaskShape cpu_only{8000, 0, 0, 0};
  // g2: 32 cores feed ⌊1000·32000/20000⌋ = 1600 of 8000 → S = 6400; after 8 cores more, 24
  //   cores feed 1200 → S = 6800: ΔS = 400, ΔG = 4·400 → score −1600 (−400 at α = 1/4).
  EXPECT_DOUBLE_EQ(Score("fgd-strand", s, 0, cpu_only, config).score, -1600);
  // At 16 cores per task the pressure is exactly 1 (≤ 1.05): α = 1/4. 32 cores feed 2000 →
  //   S = 6000; 24 cores feed 1500 → S = 6500: ΔG = 500 → score −500.
  const auto even = Target({Shape({16000, 0, 1, 1000}, 1)});
  EXPECT_DOUBLE_EQ(Score("fgd-strand", s, 0, cpu_only, even).score, -500);
  // Memory counts the same way: 64 GiB per GPU where the cluster has 76.8 (768 GiB for 10)
  //   is no pressure, 96 GiB is (1.25). g2: 256 GiB feed ⌊1000·262144/98304⌋ = 2666 → S =
  //   5334; after 32 GiB more, 224 GiB feed 2333 → S = 5667: ΔS = 333 → score −4·333 = −1332.
  const auto memory = Target({Shape({0, 96 * 1024, 1, 1000}, 1)});
  EXPECT_DOUBLE_EQ(Score("fgd-strand", s, 0, TaskShape{0, 32 * 1024, 0, 0}, memory).score, -1332);
}

TEST_F(FgdStrandTest, GpuTaskLighterOnCpuThanTheTargetRelievesStranding) {
  const auto config = Target({Shape({8000, 0, 1, 1000}, 1)});
  ClusterState s(cluster_);
  // g2 before: G = 4000 (previous test). A 1-GPU task with 4 cores: free 7000, 28 cores feed
  // ⌊1000·28000/8000⌋ = 3500 → S = 3500 → ΔG = −500 → score 500.
  EXPECT_DOUBLE_EQ(Score("fgd-strand", s, 0, TaskShape{4000, 0, 1, 1000}, config).score, 500);
  // With 16 cores: 16 cores feed 2000 → S = 5000 → ΔG = +1000 → score −1000.
  EXPECT_DOUBLE_EQ(Score("fgd-strand", s, 0, TaskShape{16000, 0, 1, 1000}, config).score, -1000);
  // FGD scores both 0: the shape still fits.
  EXPECT_DOUBLE_EQ(Score("fgd", s, 0, TaskShape{16000, 0, 1, 1000}, config).score, 0);
}

TEST_F(FgdStrandTest, ShapeThatNoLongerFitsCountsAllFreeGpusFourTimes) {
  const auto config = Target({Shape({8000, 0, 1, 1000}, 1)});
  ClusterState s(cluster_);
  ASSERT_TRUE(s.Apply({TaskPlacement{NodeId(0), 0, 0, 24000, 0}}));  // g2: 8 cores left
  // Before: 8 cores feed 1000 of 8000 free → S = 7000, F = 0 → G = 7000.
  // One more core taken: 7 < 8 cores, the shape does not fit → F = 8000 → G = 4·8000 = 32000.
  // ΔG = +25000 → score −25000 (FGD: −8000; the 7000 already stranded was priced earlier).
  EXPECT_DOUBLE_EQ(Score("fgd-strand", s, 0, TaskShape{1000, 0, 0, 0}, config).score, -25000);
  EXPECT_DOUBLE_EQ(Score("fgd", s, 0, TaskShape{1000, 0, 0, 0}, config).score, -8000);
}

TEST_F(FgdStrandTest, MemoryStrandsWhenTheTargetCarriesMemory) {
  // Target: whole 1-GPU tasks with 64 GiB and no CPU.
  const auto config = Target({Shape({0, 64 * 1024, 1, 1000}, 1)});
  ClusterState s(cluster_);
  // g2: 256 GiB feed ⌊1000·262144/65536⌋ = 4000 → S = 4000. A CPU-only task with 32 GiB:
  // 224 GiB feed ⌊1000·229376/65536⌋ = 3500 → S = 4500 → ΔG = +500 → score −500.
  EXPECT_DOUBLE_EQ(Score("fgd-strand", s, 0, TaskShape{0, 32 * 1024, 0, 0}, config).score, -500);
  // t4: 512 GiB feed 8000 ≥ 2000, and 480 GiB still feed 7500 → score 0.
  EXPECT_DOUBLE_EQ(Score("fgd-strand", s, 1, TaskShape{0, 32 * 1024, 0, 0}, config).score, 0);
  // Memory also gates fitting: with 32 GiB left on g2 the shape cannot fit → F = all free.
  ASSERT_TRUE(s.Apply({TaskPlacement{NodeId(0), 0, 0, 0, 224 * 1024}}));
  // Before: 32 GiB < 64 GiB → G = 4·8000 = 32000. A whole GPU: G = 4·7000 → score 4000.
  EXPECT_DOUBLE_EQ(Score("fgd-strand", s, 0, TaskShape{0, 0, 1, 1000}, config).score, 4000);
}

TEST_F(FgdStrandTest, ScarceModelIsPriced) {
  // Target: 3 whole 1-GPU tasks that accept any model and 1 that accepts only T4.
  GpuModelSet t4_only = GpuModelSet::None();
  t4_only.Add(*cluster_.models().Find("T4"));
  const auto config = Target({Shape({0, 0, 1, 1000}, 3), Shape({0, 0, 1, 1000}, 1, t4_only)});
  ClusterState s(cluster_);
  // Cluster C = 10000 milli (G2 8000, T4 2000); demand D = 4000, of it T4-only D_m = 1000.
  // ρ_T4 = (1000/4000)·(10000/2000) = 1.25, ρ_G2 = 0. W = 4 tasks.
  // π_T4 = round(4 · 0.3 · 4 · 1.25) = 6 per milli; π_G2 = 0.
  const TaskShape whole{0, 0, 1, 1000};
  // t4: G = 0 before and after (both shapes fit, no fragment) → score = −6·1000 = −6000.
  EXPECT_DOUBLE_EQ(Score("fgd-strand", s, 1, whole, config).score, -6000);
  // g2: the T4-only shape cannot use G2, so its 8000 free count: G = 1·4·8000 = 32000; after
  // one GPU G = 28000 → ΔG = −4000 → score 4000 (FGD: 1000).
  EXPECT_DOUBLE_EQ(Score("fgd-strand", s, 0, whole, config).score, 4000);
  EXPECT_DOUBLE_EQ(Score("fgd", s, 0, whole, config).score, 1000);
  // The price is per milli: a 500-milli share on t4 pays 6·500 = 3000 (and F grows by 500 for
  // both whole-GPU shapes: ΔG = 4·(3+1)·500 = 8000) → −11000.
  EXPECT_DOUBLE_EQ(Score("fgd-strand", s, 1, TaskShape{0, 0, 1, 500}, config).score, -11000);
  // CPU-only tasks take no GPU and pay nothing.
  EXPECT_DOUBLE_EQ(Score("fgd-strand", s, 1, TaskShape{1000, 0, 0, 0}, config).score, 0);
}

TEST_F(FgdStrandTest, PricesFollowTheClusterTheyAreAskedAbout) {
  GpuModelSet t4_only = GpuModelSet::None();
  t4_only.Add(*cluster_.models().Find("T4"));
  const auto config = Target({Shape({0, 0, 1, 1000}, 3), Shape({0, 0, 1, 1000}, 1, t4_only)});
  auto p = MakePlacementPolicy("fgd-strand", config);
  ASSERT_TRUE(p);
  Rng rng(1);
  const TaskShape whole{0, 0, 1, 1000};
  ClusterState s(cluster_);
  EXPECT_DOUBLE_EQ((*p)->Score(s, NodeId(1), whole, rng).score, -6000);
  // A second cluster with one T4 node. Model ids are per cluster: there T4 is id 0, while the
  // T4-only set names id 1 (T4 in the first cluster), which is absent. So no shape is both
  // placeable and constrained → no price; the T4-only shape cannot use the node, so its free
  // GPUs count as fragment: G = 4·2000 before, 4·1000 after → score 4000.
  Cluster t4s;
  ASSERT_TRUE(t4s.AddNode("t4", "T4", 2, 128000, 512 * 1024));
  ClusterState s2(t4s);
  EXPECT_DOUBLE_EQ((*p)->Score(s2, NodeId(0), whole, rng).score, 4000);
  // And back: the first cluster's prices again.
  EXPECT_DOUBLE_EQ((*p)->Score(s, NodeId(1), whole, rng).score, -6000);
}

TEST_F(FgdStrandTest, ShareGoesToTheGpuThatStrandsAndFragmentsLeast) {
  // Target: 500-milli shares with 4 cores (count 1).
  const auto config = Target({Shape({4000, 0, 1, 500}, 1)});
  ClusterState s(cluster_);
  ASSERT_TRUE(s.Apply({TaskPlacement{NodeId(0), 0b10, 300, 0, 0}}));  // GPU 1: 700 free
  // g2 before: free 7700, all 8 GPUs take a 500 share → F = 0; 32 cores feed
  // ⌊500·32000/4000⌋ = 4000 → S = 7700 − 4000 = 3700 → G = 3700.
  // A 200-milli share with 4 cores, on GPU 1 (700 → 500): free 7500, F = 0; 28 cores feed
  // 3500 → S = 4000 → ΔG = +300 → score −300.
  // On GPU 0 (1000 → 800): the same free milli and CPU → also −300; of equal scores the
  // first GPU tried (GPU 0) is kept.
  // A 300-milli share with 4 cores on GPU 1 (700 → 400 < 500) leaves GPU 1 unusable: free
  // 7400, F = 400 → 4·400 = 1600; usable 7000, 28 cores feed 3500 → S = 3500 → G = 5100 →
  // ΔG = +1400. On GPU 0 (1000 → 700): F = 0, usable 7400, S = 7400 − 3500 = 3900 → G = 3900
  // → ΔG = +200 → GPU 0, score −200.
  auto score = Score("fgd-strand", s, 0, TaskShape{4000, 0, 1, 200}, config);
  EXPECT_EQ(score.gpu_mask, 0b1);
  EXPECT_DOUBLE_EQ(score.score, -300);
  score = Score("fgd-strand", s, 0, TaskShape{4000, 0, 1, 300}, config);
  EXPECT_EQ(score.gpu_mask, 0b1);
  EXPECT_DOUBLE_EQ(score.score, -200);
}

TEST_F(FgdStrandTest, ScoresAreReproducibleAcrossCallsAndObjects) {
  const auto config = Target({Shape({8000, 0, 1, 1000}, 2), Shape({4000, 0, 1, 500}, 1)});
  ClusterState s(cluster_);
  ASSERT_TRUE(s.Apply({TaskPlacement{NodeId(0), 0b11, 1000, 12000, 0}}));
  auto a = MakePlacementPolicy("fgd-strand", config);
  auto b = MakePlacementPolicy("fgd-strand", config);
  ASSERT_TRUE(a && b);
  Rng rng(7);
  for (const TaskShape t :
       {TaskShape{2000, 0, 1, 250}, TaskShape{8000, 0, 2, 1000}, TaskShape{6000, 0, 0, 0}}) {
    for (int node = 0; node < 2; ++node) {
      const NodeId id(static_cast<std::uint32_t>(node));
      const auto first = (*a)->Score(s, id, t, rng);
      const auto again = (*a)->Score(s, id, t, rng);  // from the memo
      const auto other = (*b)->Score(s, id, t, rng);  // computed afresh
      EXPECT_EQ(first.score, again.score);
      EXPECT_EQ(first.score, other.score);
      EXPECT_EQ(first.gpu_mask, other.gpu_mask);
    }
  }
}

}  // namespace
}  // namespace tessera
