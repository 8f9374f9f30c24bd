// ctest-labels: integration
// Elastic TrainingJobs on the live cluster (the real tesserad and tessera-agent, sleep jobs on
// simulated GPUs): a job of 1..2 workers starts at 2, is shrunk to 1 by a job of higher
// priority without --priority-preemption, and grows back to 2 when that job ends; each resize
// restarts every rank at the new WORLD_SIZE and is in the event log. Bad elastic ranges are
// refused naming the field.
#include <gtest/gtest.h>

#include <string>

#include "server/live_harness.h"

namespace tessera::testing {
namespace {

using namespace std::chrono_literals;

// Every rank says its size, then waits to be stopped.
const char* kElasticScript = "echo WORLD RANK=$RANK WORLD_SIZE=$WORLD_SIZE; exec sleep 60";

std::string ElasticSpec(const std::string& name) {
  return TrainingSpec(name, 2, 4, kElasticScript, "  elastic: {minWorkers: 1, maxWorkers: 2}\n");
}

int RunningTasks(LiveCluster& c, const std::string& name) {
  return c.Job("default", name).value("runningTasks", -1);
}

// The event types of a job, in order.
std::vector<std::string> EventTypes(LiveCluster& c, const std::string& name) {
  std::vector<std::string> out;
  const Json job = c.Job("default", name);  // kept: the loop must not range over a temporary
  for (const auto& e : job["events"]) out.push_back(e["type"].get<std::string>());
  return out;
}

int Count(const std::vector<std::string>& v, const std::string& what) {
  return static_cast<int>(std::count(v.begin(), v.end(), what));
}

// The log of `rank`'s latest attempt.
std::string RankLog(LiveCluster& c, const std::string& name, int rank) {
  return c.Get("/v1/logs/default/" + name + "?rank=" + std::to_string(rank)).body;
}

TEST(ElasticLiveTest, ShrunkForAPriorityJobAndGrownBackWhenItEnds) {
  Watchdog watchdog(60s, "elastic shrink and grow");
  LiveCluster c;  // 2 nodes of 4 simulated H100s; no --priority-preemption
  ASSERT_TRUE(c.WaitForReadyNodes(2)) << c.Logs();
  ASSERT_EQ(c.Submit(ElasticSpec("elastic")).status, 201);
  ASSERT_TRUE(WaitFor([&] { return RunningTasks(c, "elastic") == 2; }, 20)) << c.Logs();
  EXPECT_NE(RankLog(c, "elastic", 1).find("WORLD_SIZE=2"), std::string::npos);

  // Needs one node's 4 GPUs; every GPU is the elastic job's.
  ASSERT_EQ(c.Submit(TrainingSpec("urgent", 1, 4, "sleep 3", "  priority: 100\n")).status, 201);
  ASSERT_TRUE(c.WaitForPhase("default", "urgent", "Running", 20))
      << c.Job("default", "elastic").dump(2) << c.Logs();
  ASSERT_TRUE(WaitFor([&] { return RunningTasks(c, "elastic") == 1; }, 10))
      << c.Job("default", "elastic").dump(2);
  const Json shrunk = c.Job("default", "elastic");
  EXPECT_EQ(shrunk["phase"], "Running");
  EXPECT_EQ(shrunk["attempt"], 2);
  EXPECT_EQ(shrunk["restarts"], 0) << "a resize is not a failure restart";
  ASSERT_TRUE(
      WaitFor([&] { return RankLog(c, "elastic", 0).find("WORLD") != std::string::npos; }, 10));
  EXPECT_NE(RankLog(c, "elastic", 0).find("RANK=0 WORLD_SIZE=1"), std::string::npos)
      << RankLog(c, "elastic", 0);
  // The urgent job got the GPUs of the dropped rank, not a GPU the kept rank holds.
  const Json urgent_task = c.TaskList("default", "urgent")[0];
  for (const auto& t : shrunk["taskList"]) {
    if (t["attempt"] == 2) {
      EXPECT_NE(t["node"], urgent_task["node"]) << shrunk.dump(2);
    }
  }

  // When it ends, the elastic job grows back into the idle GPUs.
  ASSERT_TRUE(c.WaitForPhase("default", "urgent", "Succeeded", 20)) << c.Logs();
  ASSERT_TRUE(WaitFor([&] { return RunningTasks(c, "elastic") == 2; }, 10))
      << c.Job("default", "elastic").dump(2);
  const Json grown = c.Job("default", "elastic");
  EXPECT_EQ(grown["attempt"], 3);
  EXPECT_EQ(grown["restarts"], 0);
  ASSERT_TRUE(
      WaitFor([&] { return RankLog(c, "elastic", 1).find("WORLD") != std::string::npos; }, 10));
  EXPECT_NE(RankLog(c, "elastic", 1).find("RANK=1 WORLD_SIZE=2"), std::string::npos);

  const auto events = EventTypes(c, "elastic");
  EXPECT_EQ(Count(events, "JobResizing"), 2) << grown["events"].dump(2);
  EXPECT_EQ(Count(events, "JobResized"), 2) << grown["events"].dump(2);
  EXPECT_EQ(Count(events, "JobPreempted"), 0) << grown["events"].dump(2);
  std::string messages;
  for (const auto& e : grown["events"]) messages += e["message"].get<std::string>() + "\n";
  EXPECT_NE(messages.find("shrinking from 2 workers to 1"), std::string::npos) << messages;
  EXPECT_NE(messages.find("growing from 1 worker to 2"), std::string::npos) << messages;
}

TEST(ElasticLiveTest, BadElasticRangeIsRefusedNamingTheField) {
  Watchdog watchdog(30s, "elastic bad input");
  LiveCluster::Options o;
  o.agents = 1;
  LiveCluster c(o);
  auto r =
      c.Submit(TrainingSpec("bad", 2, 1, "true", "  elastic: {minWorkers: 3, maxWorkers: 2}\n"));
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("spec.elastic"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("minWorkers"), std::string::npos) << r.body;
  // Nothing half-applied: no job of that name.
  EXPECT_EQ(c.Get("/v1/jobs/default/bad").status, 404);
  // A range that holds is accepted live.
  EXPECT_EQ(
      c.Submit(TrainingSpec("good", 2, 1, "true", "  elastic: {minWorkers: 1, maxWorkers: 2}\n"))
          .status,
      201);
}

}  // namespace
}  // namespace tessera::testing
