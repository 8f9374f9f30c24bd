// The controller's GPU-usage feed (server/gpu_usage.h): reports from heartbeats are kept per
// task over the window, summed per device for /metrics and /v1/nodes, and reports out of range
// or from a task the node does not run are ignored with the reason; the heartbeat carries them.
#include "server/gpu_usage_feed.h"

#include <gtest/gtest.h>

#include "server/controller_state.h"
#include "state_fixtures.h"

namespace tessera {
namespace {

TEST(GpuUsageTest, KeptPerTaskAndSummedPerDevice) {
  ControllerState state;
  AddNode(state, "node-0", 2);
  const auto id = AddJob(state, BatchYaml("eval", 2));
  RunUnit(state, id, 0, {{"node-0", {0}}});
  RunUnit(state, id, 1, {{"node-0", {1}}});
  const std::int64_t t0 = state.jobs.at(id).tasks[0], t1 = state.jobs.at(id).tasks[1];
  GpuUsageFeed feed;
  EXPECT_TRUE(RecordGpuUsageLocked(state, feed, "node-0", {{t0, 0, 0.25, 1000}, {t1, 1, 0.5, 2000}},
                                   1000, 10000)
                  .empty());
  EXPECT_TRUE(
      RecordGpuUsageLocked(state, feed, "node-0", {{t0, 0, 0.75, 1500}}, 2000, 10000).empty());
  const auto uses = DeviceUsesLocked(state, feed);
  ASSERT_EQ(uses.size(), 2u);
  EXPECT_EQ(uses[0].node, "node-0");
  EXPECT_EQ(uses[0].gpu, 0);
  EXPECT_DOUBLE_EQ(uses[0].utilization, 0.75);  // the latest
  EXPECT_DOUBLE_EQ(uses[0].memory_used_bytes, 1500);
  EXPECT_DOUBLE_EQ(uses[0].window_max_utilization, 0.75);
  EXPECT_TRUE(uses[0].simulated);
  EXPECT_DOUBLE_EQ(uses[1].utilization, 0.5);
  // The window: a sample as old as it is dropped.
  RecordGpuUsageLocked(state, feed, "node-0", {{t0, 0, 0.1, 0}}, 11000, 10000);
  EXPECT_EQ(feed.tasks.at({t0, 0}).size(), 2u);  // the samples of t=2000 and t=11000
  EXPECT_DOUBLE_EQ(DeviceUsesLocked(state, feed)[0].window_max_utilization, 0.75);
  RecordGpuUsageLocked(state, feed, "node-0", {{t0, 0, 0.1, 0}}, 12000, 10000);
  EXPECT_DOUBLE_EQ(DeviceUsesLocked(state, feed)[0].window_max_utilization, 0.1);
  // A task that ended shows no more use.
  state.tasks.at(t1).state = TaskState::kSucceeded;
  EXPECT_EQ(DeviceUsesLocked(state, feed).size(), 1u);
  MetricsWriter out;
  WriteDeviceUses(DeviceUsesLocked(state, feed), out);
  const std::string text = out.Take();
  EXPECT_NE(text.find("tessera_gpu_utilization_ratio{node=\"node-0\",gpu=\"0\",simulated=\"true\"} "
                      "0.1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("tessera_gpu_memory_used_bytes{"), std::string::npos);
}

TEST(GpuUsageTest, BadReportsAreIgnoredWithTheReason) {
  ControllerState state;
  AddNode(state, "node-0", 2);
  AddNode(state, "node-1", 2);
  const auto id = AddJob(state, BatchYaml("eval", 1));
  RunUnit(state, id, 0, {{"node-0", {0}}});
  const std::int64_t t0 = state.jobs.at(id).tasks[0];
  GpuUsageFeed feed;
  const auto ignored = RecordGpuUsageLocked(state, feed, "node-0",
                                            {{t0, 0, 1.5, 0},
                                             {t0, 0, -0.1, 0},
                                             {t0, 1, 0.5, 0},
                                             {t0, 7, 0.5, 0},
                                             {999, 0, 0.5, 0},
                                             {t0, 0, 0.5, -1}},
                                            1000, 10000);
  ASSERT_EQ(ignored.size(), 6u);
  EXPECT_NE(ignored[0].find("utilization 1.5"), std::string::npos) << ignored[0];
  EXPECT_NE(ignored[0].find("outside [0, 1]"), std::string::npos) << ignored[0];
  EXPECT_NE(ignored[2].find("does not hold GPU 1"), std::string::npos) << ignored[2];
  EXPECT_NE(ignored[3].find("GPU 7 is not one of the node's 2"), std::string::npos) << ignored[3];
  EXPECT_NE(ignored[4].find("task 999 is not running on this node"), std::string::npos);
  EXPECT_NE(ignored[5].find("negative"), std::string::npos);
  // From another node than the task's.
  EXPECT_EQ(RecordGpuUsageLocked(state, feed, "node-1", {{t0, 0, 0.5, 0}}, 1000, 10000).size(), 1u);
  EXPECT_TRUE(feed.tasks.empty());
  // The device as NVML measures it (task 0).
  EXPECT_TRUE(RecordGpuUsageLocked(state, feed, "node-1", {{0, 1, 0.3, 77}}, 1000, 10000).empty());
  ASSERT_EQ(DeviceUsesLocked(state, feed).size(), 1u);
  EXPECT_EQ(DeviceUsesLocked(state, feed)[0].node, "node-1");
}

TEST(GpuUsageTest, TheHeartbeatCarriesTheReports) {
  HeartbeatRequest req;
  req.usage.push_back({12, 3, 0.42, 1 << 20});
  auto back = HeartbeatRequestFromJson(ToJson(req));
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->usage.size(), 1u);
  EXPECT_EQ(back->usage[0], req.usage[0]);
  // An older agent sends none.
  auto none = HeartbeatRequestFromJson(nlohmann::json{{"tasks", nlohmann::json::array()}});
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->usage.empty());
  auto bad = HeartbeatRequestFromJson(
      nlohmann::json{{"usage", nlohmann::json::array({{{"gpu", "x"}, {"utilization", 1}}})}});
  EXPECT_FALSE(bad);
}

}  // namespace
}  // namespace tessera
