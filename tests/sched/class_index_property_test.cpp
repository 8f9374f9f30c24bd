// The class index against the plain scan: on random clusters, random task streams (with
// releases and failing nodes) and random seeds, every placement policy and both tie-breaks
// place every task on the same node and GPUs either way, and whole scheduling cycles give the
// same decisions, whatever the cycle's seed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/cluster_state.h"
#include "core/rng.h"
#include "sched/placement/placement_policy.h"
#include "sched/placement/task_placer.h"
#include "sched/scheduler.h"
#include "scheduler_fixtures.h"

namespace tessera {
namespace {

// Nodes of a few types (models, GPU counts, CPU and memory) with random names.
Cluster RandomCluster(Rng& rng, int nodes) {
  struct Type {
    const char* model;
    int gpus;
    std::int64_t cpu;
    std::int64_t mem;
  };
  const Type types[] = {{"V100", 8, 96000, 512 * 1024},
                        {"T4", 2, 32000, 128 * 1024},
                        {"A100", 8, 128000, 1024 * 1024},
                        {"G2", 4, 64000, 256 * 1024}};
  const auto kinds = 1 + rng.Uniform(4);
  Cluster c;
  for (int i = 0; i < nodes; ++i) {
    const Type& t = types[rng.Uniform(kinds)];
    const std::string name = "n" + std::to_string(rng.Uniform(1000)) + "-" + std::to_string(i);
    EXPECT_TRUE(c.AddNode(name, t.model, t.gpus, t.cpu, t.mem));
  }
  return c;
}

std::vector<TaskShape> Shapes() {
  return {TaskShape{4000, 16 * 1024, 1, 1000},   TaskShape{2000, 8 * 1024, 1, 500},
          TaskShape{1000, 4 * 1024, 1, 250},     TaskShape{16000, 64 * 1024, 2, 1000},
          TaskShape{32000, 128 * 1024, 4, 1000}, TaskShape{8000, 2 * 1024, 0, 0},
          TaskShape{24000, 32 * 1024, 1, 700}};
}

PlacementConfig ConfigFor(const Cluster& cluster, TieBreak tie, bool ranked, Rng& rng) {
  PlacementConfig config;
  config.tie_break = tie;
  if (ranked) {
    config.node_rank.resize(static_cast<std::size_t>(cluster.node_count()));
    for (std::size_t i = 0; i < config.node_rank.size(); ++i) {
      config.node_rank[i] = static_cast<std::uint32_t>(i);
    }
    for (std::size_t i = config.node_rank.size(); i > 1; --i) {
      std::swap(config.node_rank[i - 1], config.node_rank[rng.Uniform(i)]);
    }
  }
  std::vector<WorkloadShape> tasks;
  std::int64_t count = 10;
  for (const auto& s : Shapes()) tasks.push_back({s, GpuModelSet::Any(), count++});
  config.target_workload = TargetWorkload::FromTasks(tasks, 0.95);
  // Half the time fgd-strand gets a mix of its own that asks for 4x the CPU: more CPU per GPU
  // than any of these clusters has, so it counts stranded GPUs as fully as fragmented ones.
  if (rng.Uniform(2) == 0) {
    for (auto& t : tasks) t.shape.cpu_milli *= 4;
    config.workload_mix = TargetWorkload::FromTasks(tasks, 1.0);
  }
  return config;
}

// One stream of placements, releases and health changes, placed by both paths in lockstep.
void CompareStream(const std::string& policy_name, std::uint64_t seed) {
  Rng gen(seed);
  // At least 256 nodes: smaller clusters are always scanned.
  const Cluster cluster = RandomCluster(gen, 256 + static_cast<int>(gen.Uniform(100)));
  const auto tie = gen.Uniform(2) == 0 ? TieBreak::kSeededDraw : TieBreak::kNodeOrder;
  const PlacementConfig config = ConfigFor(cluster, tie, gen.Uniform(2) == 0, gen);
  auto indexed_policy = MakePlacementPolicy(policy_name, config);
  auto scan_policy = MakePlacementPolicy(policy_name, config);
  ASSERT_TRUE(indexed_policy && scan_policy);
  ScoreCache indexed_cache, scan_cache;
  scan_cache.set_index_classes(false);
  TaskPlacer indexed(**indexed_policy, &indexed_cache);
  TaskPlacer scan(**scan_policy, &scan_cache);
  ClusterState a(cluster), b(cluster);
  const auto shapes = Shapes();
  std::vector<TaskPlacement> placed;
  Rng ra(seed * 7 + 1), rb(seed * 7 + 1);
  for (int step = 0; step < 1500; ++step) {
    const auto what = gen.Uniform(10);
    if (what < 2 && !placed.empty()) {
      const auto i = gen.Uniform(placed.size());
      a.Release({placed[i]});
      b.Release({placed[i]});
      placed.erase(placed.begin() + static_cast<long>(i));
      continue;
    }
    if (what == 2) {
      const NodeId n(static_cast<std::uint32_t>(gen.Uniform(cluster.nodes().size())));
      const bool healthy = gen.Uniform(3) != 0;
      a.SetHealthy(n, healthy);
      b.SetHealthy(n, healthy);
      continue;
    }
    const TaskShape& shape = shapes[gen.Uniform(shapes.size())];
    GpuModelSet models = GpuModelSet::Any();
    if (gen.Uniform(4) == 0) {
      models = GpuModelSet::None();
      models.Add(static_cast<GpuModelId>(gen.Uniform(cluster.models().size())));
    }
    const auto pa = indexed.Place(a, shape, models, ra);
    const auto pb = scan.Place(b, shape, models, rb);
    ASSERT_EQ(pa.has_value(), pb.has_value())
        << policy_name << " seed " << seed << " step " << step;
    if (!pa) continue;
    ASSERT_EQ(*pa, *pb) << policy_name << " seed " << seed << " step " << step;
    ASSERT_TRUE(a.Apply({*pa}));
    ASSERT_TRUE(b.Apply({*pb}));
    placed.push_back(*pa);
  }
  // The stream was long enough for the index to be built and used.
  if (indexed_policy.value()->scores_from_state()) {
    EXPECT_NE(a.class_index(), nullptr);
  }
  EXPECT_EQ(b.class_index(), nullptr);
}

TEST(ClassIndexPropertyTest, EveryPolicyPlacesAsThePlainScan) {
  for (const auto& policy : PlacementPolicyNames()) {
    for (std::uint64_t seed = 1; seed <= 8; ++seed) CompareStream(policy, seed);
  }
}

TEST(ClassIndexPropertyTest, PoliciesThatReadTheNodeIdOrTieEverywhereScan) {
  // firstfit scores the node id; random ties every feasible node (the scan is cheaper).
  for (const char* name : {"firstfit", "random"}) {
    auto p = MakePlacementPolicy(name, {});
    ASSERT_TRUE(p);
    EXPECT_FALSE((*p)->scores_from_state()) << name;
  }
  for (const char* name : {"bestfit", "fgd", "fgd-strand", "packing", "clustering", "dotprod"}) {
    auto p = MakePlacementPolicy(name, {});
    ASSERT_TRUE(p);
    EXPECT_TRUE((*p)->scores_from_state()) << name;
  }
}

// Whole cycles: gangs, single tasks and a loaded cluster, scheduled with and without the index.
TEST(ClassIndexPropertyTest, SchedulingCyclesDecideAsThePlainScan) {
  for (const auto& policy : PlacementPolicyNames()) {
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
      Rng gen(seed);
      const Cluster cluster = RandomCluster(gen, 260);
      std::vector<Workload> jobs(1200);
      const auto shapes = Shapes();
      for (std::size_t i = 0; i < jobs.size(); ++i) {
        Workload& w = jobs[i];
        w.id = JobId(static_cast<std::uint32_t>(i));
        w.submit = static_cast<Tick>(i);
        w.duration = kHour;
        const int tasks = gen.Uniform(5) == 0 ? 1 + static_cast<int>(gen.Uniform(4)) : 1;
        w.groups.push_back({"worker", tasks, shapes[gen.Uniform(shapes.size())]});
      }
      std::vector<JobView> views;
      for (const auto& w : jobs) views.push_back(Pending(w));
      SchedulerConfig with, without;
      with.placement_policy = without.placement_policy = policy;
      with.queue_policy = without.queue_policy = "backfill";
      with.placement = without.placement = ConfigFor(cluster, TieBreak::kSeededDraw, false, gen);
      with.placement.draw_seed = without.placement.draw_seed = seed;
      without.placement_index = false;
      const Scheduler s1 = ValidScheduler(with);
      const Scheduler s2 = ValidScheduler(without);
      ClusterState a(cluster), b(cluster);
      Snapshot snap;
      snap.seed = seed;
      snap.jobs = views;
      const Decisions da = s1.Schedule(snap, a);
      // Another cycle's seed: draws come from each job's own stream, so nothing changes (the
      // simulator and the controller number their cycles differently).
      snap.seed = seed + 1000;
      const Decisions db = s2.Schedule(snap, b);
      ASSERT_EQ(da.size(), db.size()) << policy << " seed " << seed;
      for (std::size_t i = 0; i < da.size(); ++i) {
        EXPECT_EQ(da[i].job, db[i].job) << policy << " seed " << seed;
        EXPECT_EQ(da[i].placement, db[i].placement) << policy << " seed " << seed;
      }
    }
  }
}

}  // namespace
}  // namespace tessera
