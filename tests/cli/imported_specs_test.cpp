// ctest-labels: e2e
// The specs users already have, on a real cluster on 127.0.0.1 (tesserad and two agents with
// simulated GPUs): a Slurm batch script runs once on its allocation's first node with Slurm's
// environment; a run past its time limit fails with reason TimeLimit; afterok and afterany
// dependencies hold jobs back and fail them when they can never be met; and every imported
// example (Kubeflow PyTorchJob and TrainJob, Volcano Job, Kubernetes Job) runs to success.
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

class ImportedSpecsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tessera_ = BinDir() + "/tessera";
    auto up = Tessera({"up", "--state", state_.path(), "--agents", "2", "--gpus", "4xH100"});
    ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  }
  void TearDown() override { RunCommand({tessera_, "down", "--state", state_.path()}, 60); }
  CommandResult Tessera(std::vector<std::string> args, const std::string& stdin_text = "") {
    args.insert(args.begin(), tessera_);
    return RunCommand(args, 60, stdin_text, {"TESSERA_STATE=" + state_.path()});
  }
  // A batch script in the test's directory.
  std::string Script(const std::string& name, const std::string& text) {
    const std::string path = scripts_.path() + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  // The status of job `name` (phase, reason, message), as `get jobs -o json` lists it.
  Json Status(const std::string& name) {
    auto r = Tessera({"get", "jobs", "-o", "json"});
    const Json list = Json::parse(r.out, nullptr, false);
    if (!list.is_array()) return Json::object();
    for (const auto& j : list) {
      if (j["metadata"]["name"] == name) return j["status"];
    }
    return Json::object();
  }
  bool WaitForPhase(const std::string& name, const std::string& phase, double seconds) {
    return WaitFor([&] { return Status(name).value("phase", "") == phase; }, seconds);
  }

  std::string tessera_;
  TempDir state_{"tessera-imported"};
  TempDir scripts_{"tessera-sbatch"};
};

TEST_F(ImportedSpecsTest, ABatchScriptRunsOnceOnTheFirstNodeWithSlurmsEnvironment) {
  Watchdog watchdog(90s, "sbatch test");
  auto submit = Tessera({"submit", "--sbatch", "examples/slurm/train.sh"});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  EXPECT_NE(submit.out.find("job default/slurm-train submitted (TrainingJob, 2 task(s), 4 GPU(s))"),
            std::string::npos)
      << submit.out;
  // What became of the fields is said at submit.
  EXPECT_NE(submit.err.find("--time (line 13): -> spec.timeLimitSeconds = 600"), std::string::npos)
      << submit.err;
  EXPECT_NE(submit.err.find("--output (line 14): ignored"), std::string::npos) << submit.err;
  ASSERT_TRUE(WaitForPhase("slurm-train", "Succeeded", 30)) << Status("slurm-train").dump();
  const std::string log = Tessera({"logs", "slurm-train", "--rank", "0"}).out;
  EXPECT_NE(log.find("job slurm_train ("), std::string::npos) << log;
  EXPECT_NE(log.find("2 node(s) [node-"), std::string::npos) << log;
  EXPECT_NE(log.find("2 GPU(s) each"), std::string::npos) << log;
  EXPECT_NE(log.find("rendezvous 127.0.0.1:"), std::string::npos) << log;
  const std::string cwd = std::filesystem::current_path().string();
  EXPECT_NE(log.find("submitted from " + cwd + ", running in " + cwd), std::string::npos) << log;
  // Rank 1 held its node's GPUs and printed nothing: the script ran once.
  EXPECT_EQ(Tessera({"logs", "slurm-train", "--rank", "1"}).out, "");
}

TEST_F(ImportedSpecsTest, ARunPastItsTimeLimitFailsWithReasonTimeLimit) {
  Watchdog watchdog(60s, "time limit test");
  const auto script = Script("slow.sh",
                             "#!/bin/sh\n#SBATCH --job-name=slow --time=0:02\n"
                             "echo started\nsleep 60\necho not reached\n");
  ASSERT_EQ(Tessera({"submit", "--sbatch", script}).exit_code, 0);
  ASSERT_TRUE(WaitForPhase("slow", "Running", 20));
  const auto started = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitForPhase("slow", "Failed", 20)) << Status("slow").dump();
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_LT(took, 10) << "stopped at 2 s (SIGTERM ends sleep at once)";
  const Json status = Status("slow");
  EXPECT_EQ(status.value("reason", ""), "TimeLimit") << status.dump();
  EXPECT_NE(status.value("message", "").find("past spec.timeLimitSeconds (2 s)"), std::string::npos)
      << status.dump();
  const std::string log = Tessera({"logs", "slow"}).out;
  EXPECT_NE(log.find("started"), std::string::npos);
  EXPECT_EQ(log.find("not reached"), std::string::npos) << log;
}

TEST_F(ImportedSpecsTest, DependenciesHoldJobsAndFailThemWhenTheyCannotBeMet) {
  Watchdog watchdog(90s, "dependency test");
  auto job = [](const std::string& name, const std::string& command, const std::string& deps) {
    return "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: " + name +
           "}\nspec:\n  tasks: 1\n  gpusPerTask: 0\n  maxRestarts: 0\n  command: [sh, -c, '" +
           command + "']\n" + (deps.empty() ? "" : "  dependencies: " + deps + "\n");
  };
  // A job may not name one that does not exist.
  auto unknown =
      Tessera({"submit", "-f", "-"}, job("orphan", "true", "[{type: afterok, job: nowhere}]"));
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.err.find("spec.dependencies[0].job: no job default/nowhere"), std::string::npos)
      << unknown.err;
  auto submit =
      Tessera({"submit", "-f", "-"},
              job("first", "sleep 3", "") + "---\n" + job("broken", "exit 3", "") + "---\n" +
                  job("second", "echo after first", "[{type: afterok, job: first}]") + "---\n" +
                  job("never", "echo never", "[{type: afterok, job: broken}]") + "---\n" +
                  job("cleanup", "echo cleanup", "[{type: afterany, job: broken}]") + "---\n" +
                  job("chained", "echo chained", "[{type: afterok, job: never}]"));
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  ASSERT_TRUE(WaitForPhase("first", "Running", 20));
  const Json waiting = Status("second");
  EXPECT_EQ(waiting.value("phase", ""), "Pending");
  EXPECT_EQ(waiting.value("reason", ""), "Dependency") << waiting.dump();
  EXPECT_NE(waiting.value("message", "").find("waiting for default/first to succeed"),
            std::string::npos)
      << waiting.dump();
  ASSERT_TRUE(WaitForPhase("second", "Succeeded", 30)) << Status("second").dump();
  EXPECT_EQ(Status("first").value("phase", ""), "Succeeded");
  EXPECT_EQ(Tessera({"logs", "second"}).out, "after first\n");
  // broken failed: never fails with the reason, and so does what depends on it; afterany runs.
  ASSERT_TRUE(WaitForPhase("never", "Failed", 20)) << Status("never").dump();
  EXPECT_EQ(Status("never").value("reason", ""), "DependencyNeverSatisfied");
  EXPECT_NE(Status("never").value("message", "").find("afterok job default/broken ended Failed"),
            std::string::npos);
  ASSERT_TRUE(WaitForPhase("chained", "Failed", 20));
  EXPECT_EQ(Status("chained").value("reason", ""), "DependencyNeverSatisfied");
  ASSERT_TRUE(WaitForPhase("cleanup", "Succeeded", 20)) << Status("cleanup").dump();
  EXPECT_EQ(Tessera({"logs", "never"}).out, "");  // it never ran
}

TEST_F(ImportedSpecsTest, EveryImportedExampleRunsToSuccess) {
  Watchdog watchdog(120s, "imported examples test");
  const std::map<std::string, std::string> examples = {
      {"examples/jobs/kubeflow-pytorchjob.yaml", "kubeflow-mnist"},
      {"examples/jobs/kubeflow-trainjob.yaml", "trainer-hello"},
      {"examples/jobs/volcano-job.yaml", "volcano-gang"},
      {"examples/jobs/kubernetes-job.yaml", "indexed-shards"},
  };
  for (const auto& [file, name] : examples) {
    auto r = Tessera({"submit", "-f", file});
    ASSERT_EQ(r.exit_code, 0) << file << ": " << r.err;
    EXPECT_NE(r.err.find("ignored"), std::string::npos) << file << ": " << r.err;
  }
  for (const auto& [file, name] : examples) {
    EXPECT_TRUE(WaitForPhase(name, "Succeeded", 60)) << name << ": " << Status(name).dump();
  }
  // The PyTorchJob's Master is rank 0 of 2, with Tessera's rendezvous.
  const std::string master = Tessera({"logs", "kubeflow-mnist", "--rank", "0"}).out;
  EXPECT_NE(master.find("rank 0 of 2 rendezvous 127.0.0.1"), std::string::npos) << master;
  EXPECT_NE(Tessera({"logs", "volcano-gang", "--rank", "2"}).out.find("task index 1, rank 2 of 3"),
            std::string::npos);
  EXPECT_NE(Tessera({"logs", "trainer-hello", "--rank", "1"}).out.find("node 1 of 2"),
            std::string::npos);
  // The Kubernetes Job's 6 shards ran at most 2 at a time, each with its completion index.
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(Tessera({"logs", "indexed-shards", "--rank", std::to_string(i)}).out,
              "shard " + std::to_string(i) + "\n");
  }
  auto described = Tessera({"describe", "job", "indexed-shards", "-o", "json"});
  const Json detail = Json::parse(described.out, nullptr, false);
  ASSERT_TRUE(detail.is_object()) << described.out;
  std::vector<std::pair<long long, int>> edges;  // (time, +1 start / -1 end)
  for (const auto& t : detail.value("taskList", Json::array())) {
    edges.emplace_back(t["startedMs"].get<long long>(), 1);
    edges.emplace_back(t["finishedMs"].get<long long>(), -1);
  }
  std::sort(edges.begin(), edges.end());
  int running = 0, most = 0;
  for (const auto& [time, delta] : edges) most = std::max(most, running += delta);
  EXPECT_EQ(edges.size(), 12u);
  EXPECT_LE(most, 2);
}

}  // namespace
}  // namespace tessera::testing
