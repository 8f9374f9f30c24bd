// ctest-labels: inference-live
// Co-location live (docs/colocation.md): tesserad --colocation with one agent and one simulated
// GPU held by an InferenceService replica whose reported use (its usage file) the test sets.
// Two offline BatchJob tasks are placed on the replica's unused share (oversold); when the
// replica's use rises, the oversold tasks are evicted cheapest first (the one that started
// later loses less), only as many as the credit needs, and requeued; the replica never is.
// A co-location file that conflicts with the queue policy is refused naming the file and why.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "server/live_harness.h"

namespace tessera::testing {
namespace {

// The replica writes the utilisation in `load` to its usage file every 100 ms.
std::string ServiceSpec(const std::string& load) {
  const std::string script =
      "while true; do u=$(cat " + load +
      "); printf '{\"utilization\": %s}' \"$u\" > "
      "\"$TESSERA_GPU_USAGE_FILE.tmp\" && mv \"$TESSERA_GPU_USAGE_FILE.tmp\" "
      "\"$TESSERA_GPU_USAGE_FILE\"; sleep 0.1; done";
  return "apiVersion: tessera/v1\nkind: InferenceService\nmetadata: {name: chat}\nspec:\n"
         "  replicas: 1\n  gpusPerReplica: 1\n  gracePeriodSeconds: 1\n  shell: true\n"
         "  command: [" +
         Json(script).dump() + "]\n";
}

std::string BatchSpec(const std::string& name) {
  return "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: " + name +
         "}\nspec:\n  tasks: 1\n  gpusPerTask: 0.4\n  gracePeriodSeconds: 1\n  shell: true\n"
         "  command: [\"exec sleep 60\"]\n";
}

void SetLoad(const std::string& file, double u) {
  std::ofstream(file + ".tmp") << u;
  std::filesystem::rename(file + ".tmp", file);
}

int Count(const Json& job, const std::string& type) {
  int n = 0;
  for (const auto& e : job["events"]) n += e.value("type", "") == type;
  return n;
}

bool Oversold(const Json& job) {
  for (const auto& t : job["taskList"])
    if (t.value("state", "") == "Running" && t.value("oversold", false)) return true;
  return false;
}

TEST(ColocationLiveTest, OversoldTasksEvictedCheapestFirstAndServiceNever) {
  TempDir files("coloc-live");
  const std::string config = files.path() + "/colocation.yaml";
  std::ofstream(config) << "colocation:\n  oversell: 1\n  online: [InferenceService]\n"
                           "  offline: [BatchJob]\n  evictionCostSeconds: 30\n";
  const std::string load = files.path() + "/load";
  SetLoad(load, 0.1);
  LiveCluster::Options options;
  options.agents = 1;
  options.gpus = "1xH100";
  options.controller_args = {"--colocation", config, "--usage-window", "1.5"};
  LiveCluster cluster(options);
  ASSERT_TRUE(cluster.WaitForReadyNodes(1)) << cluster.Logs();

  ASSERT_EQ(cluster.Submit(ServiceSpec(load)).status, 201);
  ASSERT_TRUE(cluster.WaitForPhase("default", "chat", "Running")) << cluster.Logs();
  // Its use (0.1 of the GPU) reported: 900 milli of credit for offline work.
  ASSERT_TRUE(WaitFor([&] { return !cluster.Nodes()[0]["gpuUsage"].is_null(); }, 5));

  ASSERT_EQ(cluster.Submit(BatchSpec("old")).status, 201);
  ASSERT_TRUE(WaitFor([&] { return Oversold(cluster.Job("default", "old")); }, 5))
      << cluster.Job("default", "old").dump(2) << cluster.Logs();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(cluster.Submit(BatchSpec("new")).status, 201);
  ASSERT_TRUE(WaitFor([&] { return Oversold(cluster.Job("default", "new")); }, 5))
      << cluster.Job("default", "new").dump(2) << cluster.Logs();

  // Node views show the lent shares apart from the replica's whole GPU.
  const Json node = cluster.Nodes()[0];
  EXPECT_EQ(node["gpusAllocated"], 1.0) << node.dump();
  EXPECT_EQ(node["oversold"], 0.8) << node.dump();

  // Use 0.5: credit 500 < 800 oversold. The later task costs less to evict and is enough.
  SetLoad(load, 0.5);
  ASSERT_TRUE(WaitFor([&] { return Count(cluster.Job("default", "new"), "JobPreempted") == 1; }, 5))
      << cluster.Logs();
  // SIGTERM, the grace period, then back to Pending (requeued, not failed).
  EXPECT_TRUE(cluster.WaitForPhase("default", "new", "Pending", 5)) << cluster.Logs();
  Json evicted = cluster.Job("default", "new");
  bool why = false;
  for (const auto& e : evicted["events"])
    why |=
        e.value("message", "").find("co-location: the online load took back") != std::string::npos;
  EXPECT_TRUE(why) << evicted["events"].dump(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(Count(cluster.Job("default", "old"), "JobPreempted"), 0);
  EXPECT_TRUE(Oversold(cluster.Job("default", "old")));

  // Use 0.95: credit 50; the other one goes too. The replica is never touched.
  SetLoad(load, 0.95);
  ASSERT_TRUE(WaitFor([&] { return Count(cluster.Job("default", "old"), "JobPreempted") == 1; }, 5))
      << cluster.Logs();
  const Json chat = cluster.Job("default", "chat");
  EXPECT_EQ(Count(chat, "JobPreempted"), 0);
  EXPECT_EQ(chat["phase"], "Running");
  for (const auto& t : chat["taskList"]) EXPECT_EQ(t.value("attempt", 0), 1);
}

TEST(ColocationLiveTest, FileConflictingWithQueuePolicyRefused) {
  TempDir files("coloc-bad");
  const std::string config = files.path() + "/colocation.yaml";
  std::ofstream(config) << "colocation:\n  oversell: 0.5\n";
  const CommandResult las =
      RunCommand({BinDir() + "/tesserad", "--db", files.path() + "/t.db", "--insecure", "--port",
                  "0", "--queue-policy", "las", "--colocation", config});
  const std::string output = las.out + las.err;
  EXPECT_NE(las.exit_code, 0);
  EXPECT_NE(output.find(config + ": colocation: needs a queue policy that does not preempt"),
            std::string::npos)
      << output;
  const CommandResult preemption =
      RunCommand({BinDir() + "/tesserad", "--db", files.path() + "/t.db", "--insecure", "--port",
                  "0", "--priority-preemption", "--colocation", config});
  const std::string output2 = preemption.out + preemption.err;
  EXPECT_NE(preemption.exit_code, 0);
  EXPECT_NE(output2.find("colocation: priority preemption"), std::string::npos) << output2;
}

}  // namespace
}  // namespace tessera::testing
