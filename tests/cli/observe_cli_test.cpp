// ctest-labels: e2e
// Watching the cluster from the `tessera` command as a user does: `get jobs -w` into a file
// shows the job Pending (held), then Running (released), each line written as it happens (read
// while the watch still runs); `get events --for job/NAME` and `--since`; `top nodes` and `top
// jobs` with the simulated GPUs' use read from the agents; and bash completion from `tessera
// completion bash`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "server/process_harness.h"

namespace tessera::testing {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;

class ObserveCliTest : public ::testing::Test {
 protected:
  void SetUp() override { tessera_ = BinDir() + "/tessera"; }
  void TearDown() override {
    if (up_) RunCommand({tessera_, "down", "--state", state_.path()}, 60);
  }
  CommandResult Tessera(std::vector<std::string> args, int timeout_s = 60) {
    args.insert(args.begin(), tessera_);
    return RunCommand(args, timeout_s, "", {"TESSERA_STATE=" + state_.path()});
  }
  void Up() {
    auto up = Tessera({"up", "--state", state_.path(), "--agents", "2", "--gpus", "4xH100"});
    up_ = true;
    ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  }
  void SubmitSleeper(const std::string& name, int gpus, bool hold = false) {
    const std::string file = dir_.path() + "/" + name + ".yaml";
    std::ofstream(file) << "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: " << name
                        << ", queue: team-a}\nspec: {workers: 1, gpusPerWorker: " << gpus
                        << ", command: [sleep, '60']}\n";
    auto r = hold ? Tessera({"submit", "--hold", "-f", file}) : Tessera({"submit", "-f", file});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  bool Running(const std::string& name) {
    auto r = Tessera({"get", "jobs", name, "-o", "json"});
    auto j = Json::parse(r.out, nullptr, false);
    return !j.is_discarded() && j["status"]["phase"] == "Running";
  }

  std::string tessera_;
  TempDir state_{"tessera-observe"};
  TempDir dir_{"tessera-observe-files"};
  bool up_ = false;
};

TEST_F(ObserveCliTest, WatchEventsTopAndCompletion) {
  Watchdog watchdog(120s, "observe cli test");
  Up();
  // The watch runs in the background with its output going to a file, as `> file` would.
  const std::string watch_out = dir_.path() + "/watch.txt";
  const pid_t watch = Spawn({tessera_, "get", "jobs", "-w", "--timeout", "30"}, watch_out,
                            {"TESSERA_STATE=" + state_.path()});
  ASSERT_TRUE(WaitFor(
      [&] {
        return ReadFile(watch_out).find("No jobs yet") != std::string::npos ||
               ReadFile(watch_out).find("QUEUE") != std::string::npos;
      },
      10))
      << ReadFile(watch_out);
  // Held first, so that Pending is a state the watch can see before the job runs.
  SubmitSleeper("watched", 2, true);
  ASSERT_TRUE(WaitFor([&] { return ReadFile(watch_out).find("Pending") != std::string::npos; }, 10))
      << ReadFile(watch_out);
  ASSERT_EQ(Tessera({"release", "watched"}).exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return Running("watched"); }, 20));
  // Both changes reach the file while the watch still runs: each is flushed as it happens.
  EXPECT_TRUE(WaitFor(
      [&] {
        const std::string text = ReadFile(watch_out);
        const auto pending = text.find("Pending"), running = text.find("Running");
        return pending != std::string::npos && running != std::string::npos && pending < running;
      },
      10))
      << ReadFile(watch_out);
  EXPECT_TRUE(ProcessAlive(watch));
  Stop(watch, SIGTERM, 2000);

  // Events of the job, and only of it.
  auto events = Tessera({"get", "events", "--for", "job/watched"});
  ASSERT_EQ(events.exit_code, 0) << events.err;
  EXPECT_NE(events.out.find("JobSubmitted"), std::string::npos) << events.out;
  EXPECT_NE(events.out.find("JobScheduled"), std::string::npos) << events.out;
  EXPECT_EQ(events.out.find("NodeRegistered"), std::string::npos) << events.out;
  EXPECT_EQ(events.out.find("SchedulingCycle"), std::string::npos) << events.out;
  auto recent = Tessera({"get", "events", "--since", "10m", "-o", "json"});
  ASSERT_EQ(recent.exit_code, 0) << recent.err;
  EXPECT_NE(recent.out.find("NodeRegistered"), std::string::npos);
  auto bad = Tessera({"get", "events", "--since", "10 minutes"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--since"), std::string::npos) << bad.err;
  auto nobody = Tessera({"get", "events", "--for", "job/nobody"});
  EXPECT_NE(nobody.exit_code, 0);

  // top: the job's 2 GPUs of one 4-GPU node are allocated and (simulated) busy: 50% there.
  auto nodes = Tessera({"top", "nodes", "-o", "json"});
  ASSERT_EQ(nodes.exit_code, 0) << nodes.err;
  Json top = Json::parse(nodes.out);
  ASSERT_EQ(top.size(), 2u);
  double allocated = 0, busiest = 0;
  for (const auto& n : top) {
    EXPECT_TRUE(n["simulated"].get<bool>());
    allocated += n["gpusAllocated"].get<double>();
    busiest = std::max(busiest, n["gpuUtilization"].get<double>());
  }
  EXPECT_EQ(allocated, 2);
  EXPECT_EQ(busiest, 0.5);
  auto table = Tessera({"top", "nodes"});
  EXPECT_NE(table.out.find("GPU-UTIL"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("(simulated)"), std::string::npos) << table.out;
  auto jobs = Tessera({"top", "jobs", "-o", "json"});
  ASSERT_EQ(jobs.exit_code, 0) << jobs.err;
  Json top_jobs = Json::parse(jobs.out);
  ASSERT_EQ(top_jobs.size(), 1u);
  EXPECT_EQ(top_jobs[0]["name"], "watched");
  EXPECT_EQ(top_jobs[0]["gpuUtilization"], 1.0);
  EXPECT_EQ(top_jobs[0]["nodes"], 1);

  // Completion: the script is valid bash and completes subcommands and kinds.
  auto script = Tessera({"completion", "bash"});
  ASSERT_EQ(script.exit_code, 0) << script.err;
  std::ofstream(dir_.path() + "/complete.sh") << script.out;
  auto complete = RunCommand(
      {"/bin/bash", "-c",
       "source " + dir_.path() +
           "/complete.sh; COMP_WORDS=(tessera g); COMP_CWORD=1; _tessera; echo \"${COMPREPLY[*]}\";"
           " COMP_WORDS=(tessera get j); COMP_CWORD=2; _tessera; echo \"${COMPREPLY[*]}\";"
           " COMP_WORDS=(tessera top n); COMP_CWORD=2; _tessera; echo \"${COMPREPLY[*]}\";"
           " COMP_WORDS=(tessera get jobs --wa); COMP_CWORD=3; _tessera; echo \"${COMPREPLY[*]}\""},
      30);
  ASSERT_EQ(complete.exit_code, 0) << complete.err;
  EXPECT_EQ(complete.out, "gen get\njobs\nnodes\n--watch\n") << complete.out;
  EXPECT_EQ(Tessera({"completion", "zsh"}).exit_code, 0);
  EXPECT_NE(Tessera({"completion", "fish"}).exit_code, 0);
}

}  // namespace
}  // namespace tessera::testing
