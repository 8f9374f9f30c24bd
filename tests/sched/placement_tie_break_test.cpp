// How the placer picks among nodes of equal best score (TieBreak).
#include <gtest/gtest.h>

#include <set>

#include "sched/placement/placement_policy.h"
#include "sched/placement/task_placer.h"
#include "sched/placement/tie_walk.h"

namespace tessera {
namespace {

// Three identical nodes, added out of name order: NodeId 0 is "c", 1 is "a", 2 is "b".
class TieBreakTest : public ::testing::Test {
 protected:
  TieBreakTest() {
    for (const char* name : {"c", "a", "b"}) {
      EXPECT_TRUE(cluster_.AddNode(name, "T4", 4, 32000, 128 * 1024));
    }
  }
  // The node a CPU-only task goes to: clustering scores it 0 on every node, so all tie.
  std::uint32_t PlaceCpuTask(const PlacementConfig& config, std::uint64_t seed) {
    auto policy = MakePlacementPolicy(config_policy_, config);
    EXPECT_TRUE(policy);
    TaskPlacer placer(**policy, nullptr);
    ClusterState state(cluster_);
    Rng rng(seed);
    auto p = placer.Place(state, TaskShape{1000, 0, 0, 0}, GpuModelSet::Any(), rng);
    EXPECT_TRUE(p);
    return p ? p->node.value : ~0U;
  }
  Cluster cluster_;
  std::string config_policy_ = "clustering";
};

TEST_F(TieBreakTest, WithoutARankTheSmallestNameWins) {
  PlacementConfig config;
  config.tie_break = TieBreak::kNodeOrder;
  for (std::uint64_t seed = 0; seed < 5; ++seed) EXPECT_EQ(PlaceCpuTask(config, seed), 1U);  // "a"
}

TEST_F(TieBreakTest, TheLowestRankWins) {
  PlacementConfig config;
  config.tie_break = TieBreak::kNodeOrder;
  config.node_rank = {1, 2, 0};  // "b" first
  for (std::uint64_t seed = 0; seed < 5; ++seed) EXPECT_EQ(PlaceCpuTask(config, seed), 2U);
  config.node_rank = {0, 2, 1};  // "c" first
  EXPECT_EQ(PlaceCpuTask(config, 0), 0U);
}

TEST_F(TieBreakTest, ASeededDrawSpreadsTiesAndIsTheDefault) {
  PlacementConfig config;
  EXPECT_EQ(config.tie_break, TieBreak::kSeededDraw);
  config.node_rank = {1, 2, 0};  // ignored by a draw
  std::set<std::uint32_t> chosen;
  for (std::uint64_t seed = 0; seed < 30; ++seed) chosen.insert(PlaceCpuTask(config, seed));
  EXPECT_EQ(chosen.size(), 3U);
}

TEST_F(TieBreakTest, RandomDrawsWhateverTheConfigSays) {
  config_policy_ = "random";
  std::set<std::uint32_t> chosen;
  for (std::uint64_t seed = 0; seed < 30; ++seed) chosen.insert(PlaceCpuTask({}, seed));
  EXPECT_EQ(chosen.size(), 3U);
}

TEST_F(TieBreakTest, AHigherScoreBeatsARank) {
  // bestfit prefers the fuller node whatever the rank: node "b" (id 2, ranked last) has a GPU
  // taken.
  PlacementConfig config;
  config.tie_break = TieBreak::kNodeOrder;
  config.node_rank = {0, 1, 2};
  auto ranked = MakePlacementPolicy("bestfit", config);
  ASSERT_TRUE(ranked);
  TaskPlacer placer(**ranked, nullptr);
  ClusterState state(cluster_);
  ASSERT_TRUE(state.Apply({TaskPlacement{NodeId(2), 0b1, 1000, 0, 0}}));
  Rng rng(1);
  auto p = placer.Place(state, TaskShape{1000, 0, 1, 1000}, GpuModelSet::Any(), rng);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->node.value, 2U);
}

// A gang's draws come from its own stream, seeded by the run's seed and the job's name: the
// cycle's stream (how many cycles and placements came before) changes nothing.
class GangDrawTest : public TieBreakTest {
 protected:
  std::uint32_t PlaceJob(const std::string& name, std::uint64_t draw_seed, std::uint64_t cycle) {
    PlacementConfig config;
    config.draw_seed = draw_seed;
    auto policy = MakePlacementPolicy("clustering", config);
    EXPECT_TRUE(policy);
    TaskPlacer placer(**policy, nullptr);
    ClusterState state(cluster_);
    Workload job;
    job.name = name;
    job.groups.push_back(TaskGroup{"worker", 1, TaskShape{1000, 0, 0, 0}, {}});
    Rng rng(cycle);
    auto p = placer.PlaceGang(state, job, rng);
    EXPECT_TRUE(p);
    return p ? p->front().node.value : ~0U;
  }
};

TEST_F(GangDrawTest, TheCyclesStreamDoesNotMatter) {
  for (const char* name : {"r-0013", "r-0016", "train"}) {
    const std::uint32_t first = PlaceJob(name, 0, 1);
    for (std::uint64_t cycle = 2; cycle < 20; ++cycle) EXPECT_EQ(PlaceJob(name, 0, cycle), first);
  }
}

TEST_F(GangDrawTest, JobsAndRunSeedsDrawApart) {
  std::set<std::uint32_t> by_name, by_seed;
  for (int i = 0; i < 30; ++i) by_name.insert(PlaceJob("j" + std::to_string(i), 0, 1));
  for (std::uint64_t seed = 0; seed < 30; ++seed) by_seed.insert(PlaceJob("j0", seed, 1));
  EXPECT_EQ(by_name.size(), 3U);
  EXPECT_EQ(by_seed.size(), 3U);
}

TEST(TieWalkTest, EachDrawIsAPermutationOfTheNodes) {
  for (std::uint32_t n : {1U, 2U, 6U, 16U, 97U, 1250U}) {
    for (std::uint64_t seed = 0; seed < 8; ++seed) {
      Rng rng(seed);
      const TieWalk walk(rng, n);
      std::set<std::uint32_t> seen;
      for (std::uint64_t p = 0; p < n; ++p) {
        const NodeId id = walk.At(p);
        ASSERT_LT(id.value, n);
        EXPECT_EQ(walk.PositionOf(id), p) << n << " " << seed;
        seen.insert(id.value);
      }
      EXPECT_EQ(seen.size(), n);
    }
  }
}

// One node more or less in a tie moves the choice only when that node is the one chosen: the
// simulator and the controller may see a completion a few ms apart.
TEST_F(GangDrawTest, ANodeThatWouldNotWinLeavingTheTieChangesNothing) {
  for (const char* n : {"d", "e", "f", "g", "h"}) {
    EXPECT_TRUE(cluster_.AddNode(n, "T4", 4, 32000, 128 * 1024));
  }
  auto policy = MakePlacementPolicy("bestfit", {});
  ASSERT_TRUE(policy);
  TaskPlacer placer(**policy, nullptr);
  for (int j = 0; j < 20; ++j) {
    Workload job;
    job.name = "j" + std::to_string(j);
    job.groups.push_back(TaskGroup{"worker", 1, TaskShape{1000, 0, 4, 1000}, {}});
    Rng cycle(1);
    ClusterState all(cluster_);
    auto p = placer.PlaceGang(all, job, cycle);
    ASSERT_TRUE(p);
    for (std::uint32_t busy = 0; busy < 8; ++busy) {
      if (busy == p->front().node.value) continue;
      ClusterState less(cluster_);
      ASSERT_TRUE(less.Apply({TaskPlacement{NodeId(busy), 0xF, 1000, 0, 0}}));
      auto q = placer.PlaceGang(less, job, cycle);
      ASSERT_TRUE(q);
      EXPECT_EQ(q->front().node, p->front().node) << job.name << " without node " << busy;
    }
  }
}

}  // namespace
}  // namespace tessera
