// The FGD allocation experiment's procedure: arrival order, inflation to 130%, binning, and
// that every policy stays within capacity and is deterministic per seed.
#include "sim/allocation_experiment.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace tessera {
namespace {

std::vector<TraceJob> Pods() {
  std::vector<TraceJob> pods;
  // 40 pods: whole GPUs of 1, 2, 4 and shares of 250 and 500 milli; some constrained to T4.
  for (int i = 0; i < 40; ++i) {
    TraceJob p;
    p.id = "pod-" + std::to_string(100 + i);
    p.cpu_milli = 2000 + 1000 * (i % 3);
    p.memory_mib = 4096;
    const int kind = i % 5;
    p.gpus = kind == 0 ? 1 : kind == 1 ? 2 : kind == 2 ? 4 : 1;
    p.gpu_milli = kind == 3 ? 250 : kind == 4 ? 500 : 1000;
    if (i % 7 == 0) p.gpu_models = {"T4"};
    pods.push_back(p);
  }
  return pods;
}

Cluster SmallCluster() {
  Cluster c;
  for (int i = 0; i < 6; ++i)
    EXPECT_TRUE(c.AddNode("v" + std::to_string(i), "V100", 8, 96000, 1 << 20));
  for (int i = 0; i < 4; ++i)
    EXPECT_TRUE(c.AddNode("t" + std::to_string(i), "T4", 2, 32000, 1 << 18));
  return c;  // 56 GPUs
}

TEST(AllocationExperimentTest, ArrivalOrderInflatesToJustBelowTarget) {
  auto pods = Pods();
  Cluster c = SmallCluster();
  auto order = AllocationArrivalOrder(pods, c, 3, 1.3);
  double total = 0;
  for (auto i : order) total += pods[i].gpus * pods[i].gpu_milli;
  EXPECT_LE(total, 1.3 * 56 * 1000);
  EXPECT_GT(order.size(), pods.size());  // the 40 pods ask for less than 130%
  // The first |pods| entries are a permutation of all pods.
  std::vector<std::size_t> first(order.begin(), order.begin() + static_cast<long>(pods.size()));
  std::sort(first.begin(), first.end());
  for (std::size_t i = 0; i < pods.size(); ++i) EXPECT_EQ(first[i], i);
  // Same seed, same order, whatever the input order (pods are sorted by name first).
  auto reversed = pods;
  std::reverse(reversed.begin(), reversed.end());
  auto order2 = AllocationArrivalOrder(reversed, c, 3, 1.3);
  ASSERT_EQ(order.size(), order2.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    EXPECT_EQ(pods[order[i]].id, reversed[order2[i]].id);
}

TEST(AllocationExperimentTest, TieRankIsAPermutationDrawnPerSeedOverNodeNames) {
  Cluster c = SmallCluster();
  const auto rank = AllocationNodeTieRank(c, 7);
  ASSERT_EQ(rank.size(), c.nodes().size());
  auto sorted = rank;
  std::sort(sorted.begin(), sorted.end());
  for (std::uint32_t i = 0; i < sorted.size(); ++i) EXPECT_EQ(sorted[i], i);
  EXPECT_EQ(AllocationNodeTieRank(c, 7), rank);
  EXPECT_NE(AllocationNodeTieRank(c, 8), rank);
  // The same nodes added in another order keep their rank: it follows the names.
  Cluster reversed;
  for (auto it = c.nodes().rbegin(); it != c.nodes().rend(); ++it) {
    ASSERT_TRUE(reversed.AddNode(it->name, "V100", it->gpu_count, 32000, 1 << 18));
  }
  const auto rank2 = AllocationNodeTieRank(reversed, 7);
  for (std::size_t i = 0; i < c.nodes().size(); ++i) {
    EXPECT_EQ(rank2[c.nodes().size() - 1 - i], rank[i]) << c.nodes()[i].name;
  }
}

TEST(AllocationExperimentTest, EveryPolicyStaysWithinCapacityAndIsDeterministic) {
  auto pods = Pods();
  Cluster c = SmallCluster();
  AllocationOptions o;
  o.seeds = 2;
  o.threads = 2;
  auto a = RunAllocationExperiment(c, pods, o);
  ASSERT_TRUE(a) << a.error().message;
  auto b = RunAllocationExperiment(c, pods, o);
  ASSERT_TRUE(b);
  ASSERT_EQ(a->size(), 6U);
  for (std::size_t p = 0; p < a->size(); ++p) {
    const auto& r = (*a)[p];
    for (int bin = 0; bin < kDemandBins; ++bin) {
      if (!r.allocation_mean[bin]) continue;
      EXPECT_LE(*r.allocation_mean[bin], 1.0 + 1e-12) << r.policy;
      EXPECT_LE(*r.allocation_mean[bin], bin / 100.0 + 0.01 + 1e-12) << r.policy;  // ≤ demand
      EXPECT_GE(*r.fragmentation_mean[bin], 0.0);
      EXPECT_EQ(r.allocation_mean[bin], (*b)[p].allocation_mean[bin]) << r.policy << " bin " << bin;
    }
    // Within one run nothing departs, so allocation never falls as demand arrives.
    auto run = RunAllocationOnce(c, pods, r.policy, 1, o);
    ASSERT_TRUE(run);
    double last = 0;
    for (const auto& v : run->allocation) {
      if (!v) continue;
      EXPECT_GE(*v + 1e-12, last) << r.policy;
      last = *v;
    }
    EXPECT_GT(last, 0.5) << r.policy;
  }
}

TEST(AllocationExperimentTest, ThePlainScanGivesTheSameFigures) {
  const auto pods = Pods();
  // 280 nodes: below 256 the scheduler always scans.
  Cluster c;
  for (int i = 0; i < 160; ++i) {
    EXPECT_TRUE(c.AddNode("v" + std::to_string(i), "V100", 8, 96000, 1 << 20));
  }
  for (int i = 0; i < 120; ++i) {
    EXPECT_TRUE(c.AddNode("t" + std::to_string(i), "T4", 2, 32000, 1 << 18));
  }
  for (const TieBreak tie : {TieBreak::kNodeOrder, TieBreak::kSeededDraw}) {
    AllocationOptions indexed, scan;
    indexed.tie_break = scan.tie_break = tie;
    scan.placement_index = false;
    for (const auto& policy : indexed.policies) {
      for (std::uint64_t seed = 0; seed < 2; ++seed) {
        auto a = RunAllocationOnce(c, pods, policy, seed, indexed);
        auto b = RunAllocationOnce(c, pods, policy, seed, scan);
        ASSERT_TRUE(a && b) << policy;
        EXPECT_EQ(a->allocation, b->allocation) << policy << " seed " << seed;
        EXPECT_EQ(a->fragmentation, b->fragmentation) << policy << " seed " << seed;
        EXPECT_EQ(a->pods_failed, b->pods_failed) << policy << " seed " << seed;
      }
    }
  }
}

TEST(AllocationExperimentTest, RefusesUnknownPolicyAndEmptyTrace) {
  Cluster c = SmallCluster();
  AllocationOptions o;
  o.policies = {"fgd", "magic"};
  auto r = RunAllocationExperiment(c, Pods(), o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("magic"), std::string::npos);
  o.policies = {"fgd"};
  EXPECT_FALSE(RunAllocationExperiment(c, {}, o));
}

}  // namespace
}  // namespace tessera
