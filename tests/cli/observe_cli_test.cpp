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
#include <set>
#include <sstream>

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

// -l selects jobs on metadata.labels in kubectl's syntax, --user on metadata.user, on a list
// and on a watch; --show-labels adds the column; a malformed selector or a label of the wrong
// type is refused naming what is wrong.
TEST_F(ObserveCliTest, LabelSelectorsAndUserPickJobs) {
  Watchdog watchdog(90s, "label selector test");
  Up();
  auto submit = [&](const std::string& name, const std::string& meta) {
    const std::string file = dir_.path() + "/" + name + ".yaml";
    std::ofstream(file) << "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: " << name
                        << ", " << meta
                        << "}\nspec: {tasks: 1, gpusPerTask: 1, command: [sleep, '60']}\n";
    return Tessera({"submit", "--hold", "-f", file});
  };
  ASSERT_EQ(submit("a", "user: ana, labels: {team: nlp, tier: prod}").exit_code, 0);
  ASSERT_EQ(submit("b", "user: bo, labels: {team: nlp, tier: test}").exit_code, 0);
  ASSERT_EQ(submit("c", "user: ana, labels: {team: vision}").exit_code, 0);
  auto names = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"get", "jobs"});
    args.insert(args.end(), {"-o", "json"});
    auto r = Tessera(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::set<std::string> out;
    auto j = Json::parse(r.out, nullptr, false);
    if (j.is_array())
      for (const auto& job : j) out.insert(job["metadata"].value("name", ""));
    return out;
  };
  using Names = std::set<std::string>;
  EXPECT_EQ(names({"-l", "team=nlp"}), (Names{"a", "b"}));
  EXPECT_EQ(names({"-l", "team=nlp,tier!=test"}), (Names{"a"}));
  EXPECT_EQ(names({"-l", "tier!=test"}), (Names{"a", "c"})) << "!= also selects the unlabelled";
  EXPECT_EQ(names({"-l", "team in (vision, audio)"}), (Names{"c"}));
  EXPECT_EQ(names({"-l", "!tier"}), (Names{"c"}));
  EXPECT_EQ(names({"--user", "ana"}), (Names{"a", "c"}));
  EXPECT_EQ(names({"--user", "ana", "-l", "tier"}), (Names{"a"}));

  auto table = Tessera({"get", "jobs", "-l", "team=nlp", "--show-labels"});
  EXPECT_NE(table.out.find("LABELS"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("team=nlp,tier=prod"), std::string::npos) << table.out;
  auto none = Tessera({"get", "jobs", "-l", "team=audio"});
  EXPECT_EQ(none.out, "No jobs match -l team=audio.\n");

  const std::string watch_out = dir_.path() + "/watch-l.txt";
  const pid_t watch = Spawn({tessera_, "get", "jobs", "-w", "-l", "team=vision", "--timeout", "20"},
                            watch_out, {"TESSERA_STATE=" + state_.path()});
  ASSERT_TRUE(WaitFor([&] { return ReadFile(watch_out).find(" c ") != std::string::npos; }, 10))
      << ReadFile(watch_out);
  ASSERT_EQ(Tessera({"release", "a"}).exit_code, 0);  // not selected: never printed
  ASSERT_EQ(Tessera({"release", "c"}).exit_code, 0);
  EXPECT_TRUE(WaitFor([&] { return ReadFile(watch_out).find("Running") != std::string::npos; }, 20))
      << ReadFile(watch_out);
  Stop(watch);
  std::istringstream rows(ReadFile(watch_out));
  for (std::string line; std::getline(rows, line);) {
    std::istringstream cols(line);
    std::string queue, name;
    cols >> queue >> name;
    EXPECT_NE(name, "a") << "a job the selector leaves out was printed: " << line;
  }

  auto bad = Tessera({"get", "jobs", "-l", "team in (nlp"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("unclosed '('"), std::string::npos) << bad.err;
  auto typed = submit("d", "labels: {tier: 1}");
  EXPECT_NE(typed.exit_code, 0);
  EXPECT_NE(typed.err.find("metadata.labels.tier: must be a string (quote it)"), std::string::npos)
      << typed.err;
  auto key = submit("e", "labels: {'-bad': x}");
  EXPECT_NE(key.exit_code, 0);
  EXPECT_NE(key.err.find("metadata.labels.-bad: not a label key"), std::string::npos) << key.err;
}

// describe names the job a preemption made room for, from the controller's JobPreempted event.
TEST_F(ObserveCliTest, DescribeNamesThePreemptor) {
  Watchdog watchdog(90s, "describe preemptor test");
  auto up = Tessera({"up", "--state", state_.path(), "--agents", "1", "--gpus", "4xH100",
                     "--priority-preemption"});
  up_ = true;
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  SubmitSleeper("low", 4);
  ASSERT_TRUE(WaitFor([&] { return Running("low"); }, 20));
  const std::string file = dir_.path() + "/urgent.yaml";
  std::ofstream(file) << "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: urgent, "
                         "queue: team-a}\nspec: {priority: 100, workers: 1, gpusPerWorker: 4, "
                         "command: [sleep, '60']}\n";
  ASSERT_EQ(Tessera({"submit", "-f", file}).exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return Running("urgent"); }, 30));
  auto describe = Tessera({"describe", "job", "low"});
  EXPECT_EQ(describe.exit_code, 0) << describe.err;
  EXPECT_NE(describe.out.find("by job/team-a/urgent (preempted for job of priority 100"),
            std::string::npos)
      << describe.out;
}

}  // namespace
}  // namespace tessera::testing
