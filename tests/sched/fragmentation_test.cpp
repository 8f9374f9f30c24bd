// FGD's fragmentation measure (ATC'23 §3.2), worked by hand on one 4-GPU node.
#include "sched/placement/fragmentation.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

class FragmentationTest : public ::testing::Test {
 protected:
  FragmentationTest() { EXPECT_TRUE(cluster_.AddNode("n", "V100", 4, 32000, 65536)); }
  Cluster cluster_;
};

TEST_F(FragmentationTest, NodeFragmentPerShape) {
  ClusterState s(cluster_);
  ASSERT_TRUE(s.Apply({TaskPlacement{NodeId(0), 0b0001, 700, 0, 0}}));  // GPU0: 300 free
  ASSERT_TRUE(s.Apply({TaskPlacement{NodeId(0), 0b0010, 500, 0, 0}}));  // GPU1: 500 free
  const Node& n = cluster_.node(NodeId(0));
  const NodeState& st = s.node(NodeId(0));
  // Free: 300 + 500 + 1000 + 1000 = 2800.
  // A 1-GPU whole task: GPUs 0 and 1 cannot hold it → 300 + 500 = 800.
  EXPECT_EQ(NodeFragmentForShape(n, st, {TaskShape{0, 0, 1, 1000}, GpuModelSet::Any(), 1}), 800);
  // A 400-milli share: only GPU0 (300) is too small → 300.
  EXPECT_EQ(NodeFragmentForShape(n, st, {TaskShape{0, 0, 1, 400}, GpuModelSet::Any(), 1}), 300);
  // A 3-GPU task does not fit (only 2 full GPUs) → all 2800.
  EXPECT_EQ(NodeFragmentForShape(n, st, {TaskShape{0, 0, 3, 1000}, GpuModelSet::Any(), 1}), 2800);
  // A CPU-only task cannot use GPUs at all → 2800.
  EXPECT_EQ(NodeFragmentForShape(n, st, {TaskShape{1000, 0, 0, 0}, GpuModelSet::Any(), 1}), 2800);
  // A task that needs more CPU than is free → 2800.
  EXPECT_EQ(NodeFragmentForShape(n, st, {TaskShape{40000, 0, 1, 100}, GpuModelSet::Any(), 1}),
            2800);
  // A task that does not accept this model → 2800.
  EXPECT_EQ(NodeFragmentForShape(n, st, {TaskShape{0, 0, 1, 100}, GpuModelSet::None(), 1}), 2800);
}

TEST_F(FragmentationTest, WeightedSumAndRatio) {
  ClusterState s(cluster_);
  ASSERT_TRUE(s.Apply({TaskPlacement{NodeId(0), 0b0001, 700, 0, 0}}));  // GPU0: 300 free
  // Workload: 3 whole-GPU tasks and 1 share of 200 → p = 3/4 and 1/4.
  auto w = TargetWorkload::FromTasks({{TaskShape{0, 0, 1, 1000}, GpuModelSet::Any(), 3},
                                      {TaskShape{0, 0, 1, 200}, GpuModelSet::Any(), 1}},
                                     1.0);
  ASSERT_EQ(w.shapes.size(), 2U);
  EXPECT_EQ(w.total, 4);
  // F = 3/4·300 + 1/4·0 = 225 milli; scaled by total 4 → 900.
  EXPECT_EQ(ScaledNodeFragment(cluster_.node(NodeId(0)), s.node(NodeId(0)), w), 900);
  // Ratio = 225 / 3300 free.
  EXPECT_DOUBLE_EQ(FragmentationRatio(s, w), 225.0 / 3300.0);
}

TEST_F(FragmentationTest, CoverageKeepsMostFrequentShapes) {
  auto w = TargetWorkload::FromTasks({{TaskShape{0, 0, 1, 1000}, GpuModelSet::Any(), 90},
                                      {TaskShape{0, 0, 1, 500}, GpuModelSet::Any(), 6},
                                      {TaskShape{0, 0, 2, 1000}, GpuModelSet::Any(), 4}},
                                     0.95);
  // 90 < 95 → keep the next (96 ≥ 95) and stop.
  ASSERT_EQ(w.shapes.size(), 2U);
  EXPECT_EQ(w.shapes[0].count, 90);
  EXPECT_EQ(w.shapes[1].shape.gpu_milli, 500);
  EXPECT_EQ(w.total, 100);
}

}  // namespace
}  // namespace tessera
