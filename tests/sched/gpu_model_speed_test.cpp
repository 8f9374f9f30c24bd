// Heterogeneity-aware placement, worked by hand on a cluster of one A100 node (n0) and one
// H100 node (n1), 8 GPUs each. A job that runs at 1.0 on H100 and 0.5 on A100 goes to the
// H100 node when it is free; the model-blind baseline takes whichever node the placement
// policy picks.
#include "sched/placement/gpu_model_speed.h"

#include <gtest/gtest.h>

#include "sched/scheduler.h"
#include "sched/scheduler_fixtures.h"

namespace tessera {
namespace {

Cluster Mixed() {
  Cluster c;
  EXPECT_TRUE(c.AddNode("n0", "A100", 8, 64000, 1 << 20));
  EXPECT_TRUE(c.AddNode("n1", "H100", 8, 64000, 1 << 20));
  return c;
}

Workload Job(const Cluster& c, std::uint32_t id, int gpus) {
  Workload w;
  w.id = JobId(id);
  w.name = "job-" + std::to_string(id);
  w.submit = id;
  w.duration = 100 * kSecond;
  w.groups.push_back({"worker", 1, TaskShape{0, 0, gpus, 1000}});
  w.gpu_models = {"A100", "H100"};
  w.gpu_model_speeds = {0.5, 1.0};
  ResolveGpuModels(c.models(), w);
  return w;
}

Scheduler Make(const std::string& choice) {
  SchedulerConfig config;
  config.queue_policy = "fifo";
  config.gpu_model_choice = choice;
  return ValidScheduler(config);
}

TEST(GpuModelSpeedTest, ResolvesSpeedsByModelId) {
  Cluster c = Mixed();
  Workload w = Job(c, 0, 8);
  EXPECT_DOUBLE_EQ(w.SpeedOn(*c.models().Find("A100")), 0.5);
  EXPECT_DOUBLE_EQ(w.SpeedOn(*c.models().Find("H100")), 1.0);
  EXPECT_DOUBLE_EQ(SlowestSpeed(c, w), 0.5);
  const auto order = ModelsFastestFirst(c, w);
  ASSERT_EQ(order.size(), 2U);
  EXPECT_EQ(c.models().Name(order[0]), "H100");
  // A placement over both models runs at the slower one's speed.
  Placement both = {TaskPlacement{NodeId(0), 1, 1000, 0, 0},
                    TaskPlacement{NodeId(1), 1, 1000, 0, 0}};
  EXPECT_DOUBLE_EQ(PlacementSpeed(c, w, both), 0.5);
  // No speeds: 1.0 everywhere, one pool.
  Workload plain = w;
  plain.gpu_model_speeds.clear();
  ResolveGpuModels(c.models(), plain);
  EXPECT_TRUE(ModelsFastestFirst(c, plain).empty());
  EXPECT_DOUBLE_EQ(PlacementSpeed(c, plain, both), 1.0);
}

TEST(GpuModelSpeedTest, FastestFreeModelFirstThenTheNext) {
  Cluster c = Mixed();
  Workload a = Job(c, 0, 8);
  Workload b = Job(c, 1, 8);
  ClusterState state(c);
  auto d = Make("fastest").Schedule(
      Snapshot{{Pending(a, a.duration), Pending(b, b.duration)}, 0, 1}, state);
  ASSERT_EQ(d.size(), 2U);
  EXPECT_EQ(d[0].placement[0].node, NodeId(1));  // a: H100
  EXPECT_EQ(d[1].placement[0].node, NodeId(0));  // b: the H100 is taken, so A100
}

TEST(GpuModelSpeedTest, BlindBaselineFollowsThePlacementPolicyAlone) {
  // n0 (A100) has 2 GPUs busy; a 4-GPU job. Bestfit alone picks the fuller node, the A100;
  // fastest-first takes the H100.
  Cluster c = Mixed();
  Workload j = Job(c, 0, 4);
  for (const std::string choice : {"blind", "fastest"}) {
    ClusterState state(c);
    ASSERT_TRUE(state.Apply({TaskPlacement{NodeId(0), 0b11, 1000, 0, 0}}));
    auto d = Make(choice).Schedule(Snapshot{{Pending(j, j.duration)}, 0, 1}, state);
    ASSERT_EQ(d.size(), 1U);
    EXPECT_EQ(d[0].placement[0].node, NodeId(choice == "blind" ? 0 : 1)) << choice;
  }
}

TEST(GpuModelSpeedTest, UnknownChoiceIsRefused) {
  SchedulerConfig config;
  config.gpu_model_choice = "gavel";
  auto s = Scheduler::Create(config);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("gavel"), std::string::npos);
}

}  // namespace
}  // namespace tessera
