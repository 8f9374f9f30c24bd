// ctest-labels: integration
// One tessera-agent emulating many nodes (--simulate-nodes, KWOK-style): every emulated node
// registers with its own simulated GPUs and stays Ready on the agent's single batched
// heartbeat; tasks placed on any of them run as real processes that see their own node's name
// and GPUs; no GPU of any node is bound twice; capacity freed on one node is reused. With
// --simulate-tasks the tasks are simulated (no process) and hold their GPUs for their `sleep`;
// job listings page with limit and continue.
#include <gtest/gtest.h>
#include <signal.h>

#include <set>
#include <thread>

#include "server/live_harness.h"

namespace tessera::testing {
namespace {

using namespace std::chrono_literals;

std::string BatchSpec(const std::string& name, int tasks, const std::string& script) {
  return "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: " + name +
         "}\nspec:\n  tasks: " + std::to_string(tasks) +
         "\n  gpusPerTask: 1\n  shell: true\n  gracePeriodSeconds: 2\n  command: [" +
         Json(script).dump() + "]\n";
}

std::string NodeName(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "node-0-%04d", i);
  return buf;
}

TEST(SimulatedNodesTest, OneAgentEmulatesSixteenNodesWhoseTasksAreRealProcesses) {
  Watchdog watchdog(90s, "simulated nodes test");
  LiveCluster::Options o;
  o.agents = 1;
  o.gpus = "8xH100";
  o.simulate_nodes = 16;
  LiveCluster c(o);
  ASSERT_TRUE(c.WaitForReadyNodes(16)) << c.Logs();

  std::set<std::string> names;
  for (const auto& n : c.Nodes()) {
    names.insert(n["name"].get<std::string>());
    EXPECT_EQ(n["gpuCount"], 8) << n.dump();
    EXPECT_TRUE(n["simulated"].get<bool>()) << n.dump();
  }
  std::set<std::string> expected;
  for (int i = 0; i < 16; ++i) expected.insert(NodeName(i));
  EXPECT_EQ(names, expected);

  // A gang of 4 whole nodes: each worker on its own emulated node, seeing that node's name.
  ASSERT_EQ(c.Submit(TrainingSpec("gang", 4, 8,
                                  "echo NODE=$TESSERA_NODE GPUS=$CUDA_VISIBLE_DEVICES; "
                                  "exec sleep 30"))
                .status,
            201);
  ASSERT_TRUE(c.WaitForPhase("default", "gang", "Running")) << c.Logs();
  std::set<std::string> gang_nodes;
  for (int r = 0; r < 4; ++r) {
    std::string log;
    ASSERT_TRUE(WaitFor(
        [&] {
          log = c.Get("/v1/logs/default/gang?rank=" + std::to_string(r)).body;
          return log.find("NODE=") != std::string::npos;
        },
        20))
        << c.Logs();
    const Json tasks = c.TaskList("default", "gang");
    std::string node;
    for (const auto& t : tasks) {
      if (t["rank"] == r) node = t["node"].get<std::string>();
    }
    EXPECT_NE(log.find("NODE=" + node + " GPUS=0,1,2,3,4,5,6,7"), std::string::npos)
        << "rank " << r << " on " << node << " logged: " << log;
    gang_nodes.insert(node);
  }
  EXPECT_EQ(gang_nodes.size(), 4u);

  // 96 single-GPU tasks fill the other 12 nodes; each is a live process of its own.
  ASSERT_EQ(c.Submit(BatchSpec("fill", 96, "exec sleep 30")).status, 201);
  ASSERT_TRUE(WaitFor(
      [&] {
        int running = 0;
        for (const auto& t : c.TaskList("default", "fill")) {
          running += t["state"] == "Running";
        }
        return running == 96;
      },
      30))
      << c.Logs();
  // The cluster is full now: one more GPU must wait.
  ASSERT_EQ(c.Submit(BatchSpec("late", 1, "exit 0")).status, 201);

  std::set<std::pair<std::string, int>> claimed;
  std::set<int> pids;
  for (const char* job : {"gang", "fill"}) {
    for (const auto& t : c.TaskList("default", job)) {
      if (t["state"] != "Running") continue;
      const pid_t pid = t["pid"].get<pid_t>();
      EXPECT_GT(pid, 0);
      EXPECT_EQ(::kill(pid, 0), 0) << "task " << t.dump() << " has no live process";
      pids.insert(pid);
      for (const auto& g : t["gpus"]) {
        EXPECT_TRUE(claimed.insert({t["node"].get<std::string>(), g.get<int>()}).second)
            << "GPU " << g << " of " << t["node"] << " bound twice";
      }
    }
  }
  EXPECT_EQ(claimed.size(), 128u);
  EXPECT_EQ(pids.size(), 100u);
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(c.Job("default", "late")["phase"], "Pending");

  // Freeing the gang's nodes lets the waiting job run to completion there.
  ASSERT_EQ(c.Delete("/v1/jobs/default/gang").status, 202);
  ASSERT_TRUE(c.WaitForPhase("default", "late", "Succeeded", 30)) << c.Logs();
  const std::string late_node = c.TaskList("default", "late")[0]["node"].get<std::string>();
  EXPECT_TRUE(gang_nodes.contains(late_node)) << late_node;

  // Every emulated node is still Ready on the one agent's heartbeat.
  EXPECT_TRUE(c.WaitForReadyNodes(16, 5));
  ASSERT_EQ(c.Delete("/v1/jobs/default/fill").status, 202);
  ASSERT_TRUE(c.WaitForPhase("default", "fill", "Cancelled", 30)) << c.Logs();
}

std::string SleepSpec(const std::string& name, int tasks, const std::string& seconds) {
  return "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: " + name +
         "}\nspec: {tasks: " + std::to_string(tasks) +
         ", gpusPerTask: 1, command: [sleep, \"" + seconds + "\"]}\n";
}

TEST(SimulatedNodesTest, SimulatedTasksHoldTheirGpusForTheirSleepWithoutAProcess) {
  Watchdog watchdog(60s, "simulated tasks test");
  LiveCluster::Options o;
  o.agents = 1;
  o.gpus = "8xH100";
  o.simulate_nodes = 4;
  o.simulate_tasks = true;
  LiveCluster c(o);
  ASSERT_TRUE(c.WaitForReadyNodes(4)) << c.Logs();
  ASSERT_EQ(c.Submit(SleepSpec("long", 24, "3600")).status, 201);
  ASSERT_EQ(c.Submit(SleepSpec("short", 8, "1")).status, 201);
  ASSERT_TRUE(c.WaitForPhase("default", "short", "Running")) << c.Logs();
  for (const auto& t : c.TaskList("default", "short")) EXPECT_EQ(t["pid"], 0) << t.dump();
  // Every GPU is held: one more waits until the short tasks end after their second.
  ASSERT_EQ(c.Submit(SleepSpec("late", 1, "0.2")).status, 201);
  EXPECT_EQ(c.Job("default", "late")["phase"], "Pending");
  ASSERT_TRUE(c.WaitForPhase("default", "short", "Succeeded", 15)) << c.Logs();
  for (const auto& t : c.TaskList("default", "short")) {
    EXPECT_GE(t["finishedMs"].get<std::int64_t>() - t["startedMs"].get<std::int64_t>(), 1000)
        << t.dump();
  }
  ASSERT_TRUE(c.WaitForPhase("default", "late", "Succeeded", 15)) << c.Logs();
  // A stop ends a simulated task at once.
  ASSERT_EQ(c.Delete("/v1/jobs/default/long").status, 202);
  ASSERT_TRUE(c.WaitForPhase("default", "long", "Cancelled", 10)) << c.Logs();

  // GET /v1/jobs pages with limit and continue: long, short, late, then no continue.
  std::vector<std::string> names;
  std::string path = "/v1/jobs?limit=2";
  for (int page = 0; page < 4; ++page) {
    const auto r = c.Get(path);
    ASSERT_EQ(r.status, 200) << r.body;
    const Json body = Json::parse(r.body);
    for (const auto& j : body["jobs"]) names.push_back(j["name"].get<std::string>());
    if (!body.contains("continue")) break;
    path = "/v1/jobs?limit=2&continue=" + body["continue"].get<std::string>();
  }
  EXPECT_EQ(names, (std::vector<std::string>{"long", "short", "late"}));
  EXPECT_EQ(c.Get("/v1/jobs?limit=2&continue=x").status, 400);
}

}  // namespace
}  // namespace tessera::testing
