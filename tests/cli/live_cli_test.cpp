// ctest-labels: e2e
// The `tessera` command as a user runs it: up, get, submit (files and stdin), describe, logs,
// cancel, down, and up again on the same state directory.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "server/process_harness.h"

namespace tessera::testing {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override { tessera_ = BinDir() + "/tessera"; }
  void TearDown() override {
    // `down` stops everything `up` started, even when the test failed half-way.
    if (up_) RunCommand({tessera_, "down", "--state", state_.path()}, 60);
  }
  CommandResult Tessera(std::vector<std::string> args, const std::string& stdin_text = "") {
    args.insert(args.begin(), tessera_);
    return RunCommand(args, 60, stdin_text, {"TESSERA_STATE=" + state_.path()});
  }
  Json JsonOut(std::vector<std::string> args) {
    args.insert(args.end(), {"-o", "json"});
    auto r = Tessera(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto j = Json::parse(r.out, nullptr, false);
    return j.is_discarded() ? Json() : j;
  }
  // The status of job `name` as `get jobs -o json` lists it (phase, reason, ...).
  Json FindJob(const std::string& name) {
    for (const auto& j : JsonOut({"get", "jobs"})) {
      if (j["metadata"]["name"] == name) return j["status"];
    }
    return Json();
  }

  std::string tessera_;
  TempDir state_{"tessera-cli"};
  bool up_ = false;
};

TEST_F(CliTest, UpSubmitWatchCancelDownAndUpAgain) {
  Watchdog watchdog(150s, "cli test");
  auto up = Tessera({"up", "--state", state_.path(), "--agents", "2", "--gpus", "4xH100"});
  up_ = true;
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  EXPECT_NE(up.out.find("Cluster up in"), std::string::npos) << up.out;
  // A second `up` on a running cluster is refused.
  auto again = Tessera({"up", "--state", state_.path()});
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.err.find("already running"), std::string::npos) << again.err;

  const Json nodes = JsonOut({"get", "nodes"});
  ASSERT_EQ(nodes.size(), 2u);
  for (const auto& n : nodes) {
    EXPECT_EQ(n["status"], "Ready");
    EXPECT_EQ(n["gpuCount"], 4);
    EXPECT_TRUE(n["simulated"].get<bool>());
  }
  auto table = Tessera({"get", "nodes"});
  EXPECT_NE(table.out.find("H100 (simulated)"), std::string::npos) << table.out;

  // Every example is accepted; the training job comes first and takes all 8 GPUs.
  for (const char* file : {"examples/jobs/training-job.yaml", "examples/jobs/batch-job.yaml",
                           "examples/jobs/inference-service.yaml", "examples/jobs/dev-session.yaml",
                           "examples/jobs/rl-job.yaml"}) {
    auto r = Tessera({"submit", "-f", file});
    EXPECT_EQ(r.exit_code, 0) << file << ": " << r.err;
    EXPECT_NE(r.out.find("submitted"), std::string::npos) << r.out;
  }
  ASSERT_TRUE(WaitFor([&] { return FindJob("demo-train").value("phase", "") == "Running"; }, 30));
  std::string logs;
  ASSERT_TRUE(WaitFor(
      [&] {
        logs = Tessera({"logs", "demo-train", "--rank", "1"}).out;
        return logs.find("RANK=1 WORLD_SIZE=2") != std::string::npos;
      },
      30))
      << logs;
  EXPECT_NE(logs.find("NODE_RANK=1"), std::string::npos);

  auto describe = Tessera({"describe", "job", "demo-train"});
  EXPECT_EQ(describe.exit_code, 0) << describe.err;
  EXPECT_NE(describe.out.find("Phase:      Running"), std::string::npos) << describe.out;
  EXPECT_NE(describe.out.find("0,1,2,3 sim"), std::string::npos) << describe.out;
  EXPECT_NE(describe.out.find("TaskStarted"), std::string::npos) << describe.out;
  auto yaml = Tessera({"get", "jobs", "-o", "yaml"});
  EXPECT_NE(yaml.out.find("name: demo-train"), std::string::npos) << yaml.out;
  auto queues = Tessera({"get", "queues"});
  EXPECT_NE(queues.out.find("research/eval"), std::string::npos) << queues.out;

  // A bad spec is refused with the field and the reason.
  auto bad = Tessera({"submit", "-f", "-"},
                     "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: bad}\n"
                     "spec: {workers: -3, gpusPerWorker: 1, command: [x]}\n");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("spec.workers: must be between 1 and 100000, got -3"), std::string::npos)
      << bad.err;

  // Cancel stops the gang; the next jobs in line start.
  auto cancel = Tessera({"cancel", "demo-train", "--wait"});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_NE(cancel.out.find("Cancelled"), std::string::npos) << cancel.out;
  ASSERT_TRUE(WaitFor([&] { return FindJob("demo-eval").value("phase", "") != "Pending"; }, 30));

  // A short job from stdin, followed to its end with logs -f.
  auto hello = Tessera({"submit", "-f", "-"},
                       "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: hello, queue: "
                       "quick}\nspec: {tasks: 1, gpusPerTask: 0, command: [echo, hello from "
                       "tessera]}\n");
  ASSERT_EQ(hello.exit_code, 0) << hello.err;
  auto follow = Tessera({"logs", "hello", "-f"});
  EXPECT_EQ(follow.exit_code, 0) << follow.err;
  EXPECT_NE(follow.out.find("hello from tessera"), std::string::npos) << follow.out;
  EXPECT_TRUE(WaitFor([&] { return FindJob("hello").value("phase", "") == "Succeeded"; }, 20));

  // Down, and the state survives for the next up.
  auto down = Tessera({"down", "--state", state_.path()});
  EXPECT_EQ(down.exit_code, 0) << down.err;
  EXPECT_NE(down.out.find("stopped tesserad"), std::string::npos) << down.out;
  auto gone = Tessera({"get", "jobs"});
  EXPECT_NE(gone.exit_code, 0);
  EXPECT_NE(gone.err.find("no running cluster"), std::string::npos) << gone.err;
  auto up2 =
      Tessera({"up", "--state", state_.path(), "--agents", "2", "--gpus", "4xH100", "--seed", "3"});
  ASSERT_EQ(up2.exit_code, 0) << up2.err;
  EXPECT_EQ(FindJob("demo-train").value("phase", ""), "Cancelled");
  EXPECT_EQ(FindJob("hello").value("phase", ""), "Succeeded");

  // The run exported (every job's spec, the nodes, the cycles' records) and replayed.
  const std::string file = state_.path() + "/export.json";
  auto exported = Tessera({"export", "-o", file});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  std::ifstream in(file);
  const Json doc = Json::parse(in, nullptr, false);
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc["controller"]["seed"], 3) << "the run seed of the second up";
  EXPECT_EQ(doc["nodes"].size(), 2u);
  ASSERT_FALSE(doc["jobs"].empty());
  EXPECT_TRUE(doc["jobs"][0]["spec"].is_object());
  auto replay = Tessera(
      {"sim", "--experiment", "replay", "--from-export", file, "--out", state_.path() + "/replay"});
  ASSERT_EQ(replay.exit_code, 0) << replay.err;
  EXPECT_NE(replay.out.find("decisions agreeing:"), std::string::npos) << replay.out;
  EXPECT_NE(replay.out.find("demo-train"), std::string::npos) << replay.out;
}

// submit --hold keeps jobs Pending (reason Held) across a restart of the cluster; release
// starts them.
TEST_F(CliTest, HeldJobsStartOnlyWhenReleasedEvenAfterARestart) {
  Watchdog watchdog(120s, "hold test");
  auto up = Tessera({"up", "--state", state_.path(), "--agents", "1", "--gpus", "2xH100"});
  up_ = true;
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  auto spec = [](const std::string& name) {
    return "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: " + name +
           "}\nspec: {tasks: 1, gpusPerTask: 1, command: [echo, " + name + "]}\n";
  };
  auto held = Tessera({"submit", "--hold", "-f", "-"}, spec("held-1") + "---\n" + spec("held-2"));
  ASSERT_EQ(held.exit_code, 0) << held.err;
  EXPECT_NE(held.out.find("held-1 submitted (BatchJob, 1 task(s), 1 GPU(s)), held"),
            std::string::npos)
      << held.out;
  std::this_thread::sleep_for(1500ms);  // a scheduling cycle or more: nothing starts
  EXPECT_EQ(FindJob("held-1").value("phase", ""), "Pending");
  EXPECT_EQ(FindJob("held-1").value("reason", ""), "Held");

  auto down = Tessera({"down", "--state", state_.path()});
  ASSERT_EQ(down.exit_code, 0) << down.err;
  auto up2 = Tessera({"up", "--state", state_.path(), "--agents", "1", "--gpus", "2xH100"});
  ASSERT_EQ(up2.exit_code, 0) << up2.err;
  EXPECT_EQ(FindJob("held-2").value("reason", ""), "Held");

  auto unknown = Tessera({"release", "held-1", "nope"});
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.err.find("job \"nope\" not found"), std::string::npos) << unknown.err;
  EXPECT_EQ(FindJob("held-1").value("reason", ""), "Held") << "nothing half-applied";
  auto neither = Tessera({"release"});
  EXPECT_NE(neither.exit_code, 0);

  auto one = Tessera({"release", "held-1"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find("1 job(s) released"), std::string::npos) << one.out;
  EXPECT_TRUE(WaitFor([&] { return FindJob("held-1").value("phase", "") == "Succeeded"; }, 20));
  EXPECT_EQ(FindJob("held-2").value("phase", ""), "Pending");
  auto all = Tessera({"release", "--all"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_NE(all.out.find("1 job(s) released"), std::string::npos) << all.out;
  EXPECT_TRUE(WaitFor([&] { return FindJob("held-2").value("phase", "") == "Succeeded"; }, 20));
}

// A relative spec.workingDir is the directory `tessera submit` runs in (this test's: the
// repository), as with sbatch; the task runs there.
TEST_F(CliTest, ARelativeWorkingDirIsWhereSubmitRuns) {
  Watchdog watchdog(60s, "workingDir test");
  auto up = Tessera({"up", "--state", state_.path(), "--agents", "1", "--gpus", "1xH100"});
  up_ = true;
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  auto r = Tessera({"submit", "-f", "-"},
                   "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: where}\n"
                   "spec: {tasks: 1, gpusPerTask: 1, workingDir: examples/../examples/, "
                   "command: [pwd]}\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string expected = std::filesystem::current_path().string() + "/examples";
  ASSERT_TRUE(WaitFor([&] { return FindJob("where").value("phase", "") == "Succeeded"; }, 20));
  EXPECT_EQ(JsonOut({"describe", "job", "where"})["spec"]["spec"]["workingDir"], expected);
  EXPECT_EQ(Tessera({"logs", "where"}).out, expected + "\n");
}

TEST_F(CliTest, SaysHowToFindACluster) {
  auto r = RunCommand({tessera_, "get", "jobs"}, 10, "", {"TESSERA_STATE=", "TESSERA_SERVER="});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("pass --state DIR"), std::string::npos) << r.err;
  auto bad_output =
      RunCommand({tessera_, "get", "jobs", "-o", "xml", "--server", "http://127.0.0.1:9"}, 10);
  EXPECT_NE(bad_output.err.find("expected table, json or yaml"), std::string::npos)
      << bad_output.err;
  auto unreachable = RunCommand({tessera_, "get", "nodes", "--server", "http://127.0.0.1:9"}, 20);
  EXPECT_NE(unreachable.exit_code, 0);
  EXPECT_NE(unreachable.err.find("cannot reach the controller"), std::string::npos)
      << unreachable.err;
}

}  // namespace
}  // namespace tessera::testing
