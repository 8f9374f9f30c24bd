// The index of nodes by class: equal nodes share a class, a change moves one node, members are
// found in the index's node order, copies are independent.
#include "core/node_class_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <vector>

#include "core/cluster_state.h"
#include "core/rng.h"

namespace tessera {
namespace {

class NodeClassIndexTest : public ::testing::Test {
 protected:
  NodeClassIndexTest() {
    for (int i = 0; i < 130; ++i) {  // three 64-node words
      EXPECT_TRUE(cluster_.AddNode("n" + std::to_string(i), "T4", 4, 32000, 64 * 1024));
    }
    EXPECT_TRUE(cluster_.AddNode("other", "V100", 8, 96000, 512 * 1024));
  }
  // The class ids that have members, as a set.
  static std::set<std::uint32_t> Active(const NodeClassIndex& index) {
    return {index.active().begin(), index.active().end()};
  }
  Cluster cluster_;
};

TEST_F(NodeClassIndexTest, EqualNodesShareAClassAndAChangeMovesOneNode) {
  ClusterState state(cluster_);
  const NodeClassIndex* index = state.ClassIndexAfterScans(nullptr, 0);
  ASSERT_NE(index, nullptr);
  ASSERT_EQ(index->active().size(), 2U);  // the 130 T4 nodes, the V100 node
  const std::uint32_t t4 = index->active()[0];
  EXPECT_EQ(index->at(t4).count, 130U);
  EXPECT_EQ(index->First(t4), NodeId(0));

  ASSERT_TRUE(state.Apply({TaskPlacement{NodeId(70), 0b1, 1000, 1000, 0}}));
  ASSERT_EQ(index->active().size(), 3U);
  EXPECT_EQ(index->at(t4).count, 129U);
  for (std::uint32_t c : index->active()) {
    if (index->at(c).count == 1 && index->at(c).key.model == index->at(t4).key.model) {
      EXPECT_EQ(index->First(c), NodeId(70));
      EXPECT_EQ(index->at(c).key.gpu_free_each[0], 0);
    }
  }
  // A share on another GPU of another node is another state: GPU order is part of the key.
  ASSERT_TRUE(state.Apply({TaskPlacement{NodeId(71), 0b10, 1000, 1000, 0}}));
  EXPECT_EQ(index->active().size(), 4U);
  // Released, both nodes are back with the others; the emptied classes are gone.
  state.Release({TaskPlacement{NodeId(70), 0b1, 1000, 1000, 0}});
  state.Release({TaskPlacement{NodeId(71), 0b10, 1000, 1000, 0}});
  EXPECT_EQ(index->active().size(), 2U);
  EXPECT_EQ(index->at(t4).count, 130U);
}

TEST_F(NodeClassIndexTest, HealthAndAffinityTagsArePartOfTheClass) {
  ClusterState state(cluster_);
  const NodeClassIndex* index = state.ClassIndexAfterScans(nullptr, 0);
  state.SetHealthy(NodeId(3), false);
  EXPECT_EQ(index->active().size(), 3U);
  state.SetHealthy(NodeId(3), true);
  EXPECT_EQ(index->active().size(), 2U);
  // Two nodes with the same free GPUs but tasks of different affinity tags differ.
  ASSERT_TRUE(state.Apply({TaskPlacement{NodeId(5), 0b1, 500, 0, 0},
                           TaskPlacement{NodeId(5), 0b1, 500, 0, 0}}));   // two shares: tag 0
  ASSERT_TRUE(state.Apply({TaskPlacement{NodeId(6), 0b1, 1000, 0, 0}}));  // one whole: tag 1
  EXPECT_EQ(state.node(NodeId(5)).gpu_free, state.node(NodeId(6)).gpu_free);
  EXPECT_EQ(index->active().size(), 4U);
}

TEST_F(NodeClassIndexTest, NthCountsMembersOfSeveralClassesInNodeOrder) {
  ClusterState state(cluster_);
  const NodeClassIndex* index = state.ClassIndexAfterScans(nullptr, 0);
  // Nodes 0..129 are T4s, 130 the V100: the two classes together in id order.
  const std::vector<std::uint32_t> both = index->active();
  EXPECT_EQ(index->Nth(both, 0), NodeId(0));
  EXPECT_EQ(index->Nth(both, 64), NodeId(64));
  EXPECT_EQ(index->Nth(both, 130), NodeId(130));
  EXPECT_EQ(index->First(both), NodeId(0));
  ASSERT_TRUE(state.Apply({TaskPlacement{NodeId(0), 0b1, 1000, 0, 0}}));
  // Node 0 left the T4 class: the T4 class alone now starts at node 1.
  for (std::uint32_t c : index->active()) {
    if (index->at(c).count == 129) {
      EXPECT_EQ(index->First(c), NodeId(1));
      EXPECT_EQ(index->Nth({c}, 128), NodeId(129));
    }
  }
}

TEST_F(NodeClassIndexTest, AnOrderDecidesWhichMemberIsFirst) {
  auto order = std::make_shared<NodeOrder>();
  const auto n = static_cast<std::uint32_t>(cluster_.node_count());
  for (std::uint32_t p = 0; p < n; ++p) order->node_at.push_back(NodeId(n - 1 - p));
  order->position.resize(n);
  for (std::uint32_t p = 0; p < n; ++p) order->position[order->node_at[p].value] = p;
  ClusterState state(cluster_);
  const NodeClassIndex* index = state.ClassIndexAfterScans(order, 0);
  EXPECT_EQ(index->First(index->active()), NodeId(130));
  EXPECT_EQ(index->Nth(index->active(), 1), NodeId(129));
  // Asked for another order, the state rebuilds its index.
  const NodeClassIndex* by_id = state.ClassIndexAfterScans(nullptr, 0);
  EXPECT_EQ(by_id->First(by_id->active()), NodeId(0));
}

TEST_F(NodeClassIndexTest, BuiltOnlyAfterTheScansAndCopiedWithTheState) {
  ClusterState state(cluster_);
  EXPECT_EQ(state.ClassIndexAfterScans(nullptr, 2), nullptr);
  EXPECT_EQ(state.ClassIndexAfterScans(nullptr, 2), nullptr);
  ASSERT_NE(state.ClassIndexAfterScans(nullptr, 2), nullptr);
  ClusterState copy = state;
  ASSERT_TRUE(copy.Apply({TaskPlacement{NodeId(1), 0b1, 1000, 0, 0}}));
  EXPECT_EQ(copy.class_index()->active().size(), 3U);
  EXPECT_EQ(state.class_index()->active().size(), 2U);  // the original is unchanged
  EXPECT_EQ(copy.class_index()->lineage(), state.class_index()->lineage());
}

// Across blocks of member counts (1,024 positions each): on 3,000 nodes in random states, the
// r-th member of any set of classes is the r-th such node in the order, counted node by node.
TEST(NodeClassIndexBlocksTest, NthMatchesACountOverEveryNode) {
  Cluster cluster;
  for (int i = 0; i < 3000; ++i) {
    ASSERT_TRUE(cluster.AddNode("n" + std::to_string(i), "T4", 4, 32000, 64 * 1024));
  }
  auto reversed = std::make_shared<NodeOrder>();
  for (std::uint32_t p = 0; p < 3000; ++p) reversed->node_at.push_back(NodeId(2999 - p));
  reversed->position.resize(3000);
  for (std::uint32_t p = 0; p < 3000; ++p) reversed->position[reversed->node_at[p].value] = p;
  for (const auto& order :
       {std::shared_ptr<const NodeOrder>(), std::shared_ptr<const NodeOrder>(reversed)}) {
    ClusterState state(cluster);
    const NodeClassIndex* index = state.ClassIndexAfterScans(order, 0);
    Rng rng(7);
    std::vector<TaskPlacement> placed;
    for (int step = 0; step < 6000; ++step) {
      if (rng.Uniform(3) == 0 && !placed.empty()) {  // releases empty some words and blocks
        const auto i = rng.Uniform(placed.size());
        state.Release({placed[i]});
        placed.erase(placed.begin() + static_cast<long>(i));
        continue;
      }
      const TaskPlacement t{NodeId(static_cast<std::uint32_t>(rng.Uniform(3000))),
                            static_cast<std::uint16_t>(1U << rng.Uniform(4)), 1000, 0, 0};
      if (state.Fits(t) && state.Apply({t})) placed.push_back(t);
      if (step % 500 != 499) continue;
      std::vector<std::uint32_t> ids;
      for (std::uint32_t c : index->active()) {
        if (rng.Uniform(2) == 0) ids.push_back(c);
      }
      if (ids.empty()) ids.push_back(index->active().front());
      std::vector<NodeId> members;  // in the order, node by node
      for (std::uint32_t p = 0; p < 3000; ++p) {
        const NodeId n = order ? order->node_at[p] : NodeId(p);
        if (std::find(ids.begin(), ids.end(), index->class_of(n)) != ids.end()) {
          members.push_back(n);
        }
      }
      ASSERT_FALSE(members.empty());
      EXPECT_EQ(index->First(ids), members.front());
      for (int k = 0; k < 20; ++k) {
        const auto r = rng.Uniform(members.size());
        ASSERT_EQ(index->Nth(ids, r), members[r]) << "step " << step << " r " << r;
      }
      ASSERT_EQ(index->Nth(ids, members.size() - 1), members.back());
    }
  }
}

}  // namespace
}  // namespace tessera
