// ctest-labels: e2e
// Real PyTorch DDP training (examples/programs/ddp_train.py, CPU and gloo, started by
// examples/jobs/pytorch-ddp.yaml) under the real tesserad and agents: a normal run, the loss of a
// node mid-run, preemption by a job of higher priority, and workers of several processes. Logs
// are read with `tessera logs`, as a user reads them.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "server/live_harness.h"

namespace tessera::testing {
namespace {

using namespace std::chrono_literals;

// Replaces `from` (which must occur) by `to` in `text`.
void Substitute(std::string& text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  ASSERT_NE(at, std::string::npos) << "examples/jobs/pytorch-ddp.yaml no longer has: " << from;
  text.replace(at, from.size(), to);
}

// "step N loss X" lines of a log, by step (the last value when a step ran twice).
std::map<int, double> LossByStep(const std::string& log) {
  std::map<int, double> out;
  static const std::regex re(R"(\] step (\d+) loss ([0-9.]+))");
  for (std::sregex_iterator it(log.begin(), log.end(), re), end; it != end; ++it) {
    out[std::stoi((*it)[1])] = std::stod((*it)[2]);
  }
  return out;
}

int LastStep(const std::string& log) {
  const auto losses = LossByStep(log);
  return losses.empty() ? 0 : losses.rbegin()->first;
}

// The N of the first "<what> N" in `log`, or -1.
int NumberAfter(const std::string& log, const std::string& what) {
  const auto at = log.find(what);
  if (at == std::string::npos) return -1;
  return std::atoi(log.c_str() + at + what.size());
}

class PytorchDdpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = RunCommand({"/usr/bin/python3", "-c",
                         "import torch.distributed as d; "
                         "assert d.is_gloo_available()"},
                        60);
    if (r.exit_code != 0) {
      GTEST_SKIP() << "/usr/bin/python3 cannot import torch with gloo (apt-get install "
                      "python3-torch; scripts/install-deps.sh does): "
                   << r.err;
    }
  }

  // examples/jobs/pytorch-ddp.yaml for this machine: a fresh checkpoint directory, and the given
  // name, steps, checkpoint cadence and processes per worker. Its `workingDir: .` is this
  // directory (the repository), resolved by `tessera submit`. A time-based checkpoint lands on
  // a step of its own, so only the test that asks for one gets a short `intervalSeconds`.
  std::string Spec(const std::string& name, int steps, int checkpoint_every,
                   const std::string& more_args = "", int processes = 1,
                   int checkpoint_seconds = 3600) {
    std::string spec = ReadFile("examples/jobs/pytorch-ddp.yaml");
    Substitute(spec, "name: ddp-tiny-lm", "name: " + name);
    Substitute(spec, "/tmp/tessera-ckpt/ddp-tiny-lm", ckpt_.path() + "/" + name);
    Substitute(spec, "intervalSeconds: 60",
               "intervalSeconds: " + std::to_string(checkpoint_seconds));
    // A step and a save take well under a second; a peer stuck in a collective is killed soon.
    Substitute(spec, "gracePeriodSeconds: 30", "gracePeriodSeconds: 10");
    Substitute(spec, "processesPerWorker: 1", "processesPerWorker: " + std::to_string(processes));
    Substitute(spec, R"(--steps, "300", --checkpoint-every, "25")",
               "--steps, \"" + std::to_string(steps) + "\", --checkpoint-every, \"" +
                   std::to_string(checkpoint_every) + "\", --batch-size, \"8\", --seq-len, \"16\"" +
                   more_args);
    return spec;
  }

  // `tessera <args> --server URL`.
  CommandResult Tessera(LiveCluster& c, std::vector<std::string> args,
                        const std::string& stdin_text = "") {
    args.insert(args.begin(), BinDir() + "/tessera");
    args.insert(args.end(), {"--server", c.url()});
    return RunCommand(args, 60, stdin_text);
  }
  std::string Logs(LiveCluster& c, const std::string& name, int rank, int attempt = 0) {
    std::vector<std::string> args = {"logs", name, "--rank", std::to_string(rank)};
    if (attempt > 0) args.insert(args.end(), {"--attempt", std::to_string(attempt)});
    auto r = Tessera(c, args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }
  // The log of the latest attempt of `rank` straight from the API (cheap enough to poll).
  static std::string PollLog(LiveCluster& c, const std::string& name, int rank) {
    return c.Get("/v1/logs/default/" + name + "?rank=" + std::to_string(rank)).body;
  }
  void Submit(LiveCluster& c, const std::string& spec) {
    auto r = Tessera(c, {"submit", "-f", "-"}, spec);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }

  TempDir ckpt_{"tessera-ckpt"};
};

TEST_F(PytorchDdpTest, NormalRunLossGoesDownAndEveryRankLogs) {
  Watchdog watchdog(150s, "pytorch normal run");
  LiveCluster c;
  ASSERT_TRUE(c.WaitForReadyNodes(2));
  // Checkpoints every 10 steps and, from spec.checkpoint.intervalSeconds, every second.
  Submit(c, Spec("ddp-normal", 40, 10, ", --min-step-seconds, \"0.15\"", 1, 1));
  ASSERT_TRUE(c.WaitForPhase("default", "ddp-normal", "Succeeded", 120))
      << c.Job("default", "ddp-normal").dump(2) << c.Logs();

  std::set<std::string> nodes;
  for (const auto& t : c.TaskList("default", "ddp-normal")) nodes.insert(t["node"]);
  EXPECT_EQ(nodes.size(), 2u) << "one worker per agent";
  for (int rank = 0; rank < 2; ++rank) {
    const std::string log = Logs(c, "ddp-normal", rank);
    const std::string r = std::to_string(rank);
    EXPECT_NE(log.find("RANK=" + r + " WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1"),
              std::string::npos)
        << log;
    EXPECT_NE(log.find("rendezvous done: 2 ranks"), std::string::npos) << log;
    EXPECT_NE(log.find("no checkpoint: starting at step 0"), std::string::npos) << log;
    EXPECT_NE(log.find("training finished at step 40"), std::string::npos) << log;
    const auto losses = LossByStep(log);
    ASSERT_EQ(losses.size(), 40u) << log;
    // Mean over the first and last five steps: the model learns the grammar's letters.
    double first = 0, last = 0;
    for (int s = 1; s <= 5; ++s) first += losses.at(s) / 5;
    for (int s = 36; s <= 40; ++s) last += losses.at(s) / 5;
    EXPECT_LT(last, 0.8 * first) << log;
    std::printf("figures: rank %d loss %.3f -> %.3f (mean of steps 1-5 and 36-40)\n", rank, first,
                last);
  }
  // The job ran in the submitter's directory (`workingDir: .`).
  const Json job = c.Job("default", "ddp-normal");
  EXPECT_EQ(job["spec"]["spec"]["workingDir"], std::filesystem::current_path().string())
      << job.dump(2);
  // Rank 0 wrote the checkpoints: by steps, by time (TESSERA_CHECKPOINT_INTERVAL_SECONDS=1 from
  // the spec; 10 steps take at least 1.5 s), and the final step.
  EXPECT_TRUE(std::filesystem::exists(ckpt_.path() + "/ddp-normal/checkpoint.pt"));
  const std::string log0 = Logs(c, "ddp-normal", 0);
  EXPECT_NE(log0.find("TESSERA_CHECKPOINT_INTERVAL_SECONDS=1"), std::string::npos) << log0;
  EXPECT_NE(log0.find("checkpoint saved at step 10 (interval)"), std::string::npos) << log0;
  EXPECT_NE(log0.find(" (time)"), std::string::npos) << log0;
  EXPECT_NE(log0.find("checkpoint saved at step 40 (final)"), std::string::npos) << log0;
}

TEST_F(PytorchDdpTest, NodeLossResumesFromLastCheckpointOnSpareNode) {
  Watchdog watchdog(180s, "pytorch node loss");
  LiveCluster::Options o;
  o.agents = 3;  // one spare node, so that the gang is re-placed at once
  LiveCluster c(o);
  ASSERT_TRUE(c.WaitForReadyNodes(3));
  const int interval = 10, steps = 70;
  Submit(c, Spec("ddp-nodeloss", steps, interval, ", --min-step-seconds, \"0.1\""));
  ASSERT_TRUE(WaitFor([&] { return LastStep(PollLog(c, "ddp-nodeloss", 1)) >= 25; }, 90))
      << PollLog(c, "ddp-nodeloss", 1) << c.Logs();

  // Kill the agent of rank 0 (the master and checkpoint writer) and its task processes, as a
  // node that loses power would.
  const Json running = c.Job("default", "ddp-nodeloss");
  ASSERT_EQ(running["attempt"], 1) << running.dump(2) << Logs(c, "ddp-nodeloss", 0, 1);
  std::string node0;
  for (const auto& t : running["taskList"]) {
    if (t["rank"] == 0) node0 = t["node"];
  }
  const int victim = node0.back() - '0';
  ASSERT_EQ(c.NodeName(victim), node0);
  std::vector<pid_t> groups;
  for (const auto& e : std::filesystem::directory_iterator(c.AgentState(victim) + "/tasks")) {
    auto doc = Json::parse(ReadFile(e.path().string()), nullptr, false);
    if (doc.is_object() && doc.value("pgid", 0) > 0) groups.push_back(doc["pgid"].get<pid_t>());
  }
  ASSERT_FALSE(groups.empty());
  const auto killed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  c.KillAgent(victim);
  for (pid_t g : groups) ::kill(-g, SIGKILL);

  ASSERT_TRUE(c.WaitForPhase("default", "ddp-nodeloss", "Succeeded", 120))
      << c.Job("default", "ddp-nodeloss").dump(2) << c.Logs();
  const Json job = c.Job("default", "ddp-nodeloss");
  EXPECT_EQ(job["restarts"], 1);
  EXPECT_EQ(job["attempt"], 2);
  for (const auto& t : job["taskList"]) {
    if (t["attempt"] == 2) {
      EXPECT_NE(t["node"], node0) << "re-placed away from the lost node";
    }
  }
  // The survivor's first attempt shows how far training got before the node was lost.
  const std::string before = Logs(c, "ddp-nodeloss", 1, 1);
  const int reached = LastStep(before);
  ASSERT_GE(reached, 25) << before;
  std::int64_t restarted_ms = 0;
  for (const auto& t : job["taskList"]) {
    if (t["attempt"] == 2)
      restarted_ms = std::max(restarted_ms, t["startedMs"].get<std::int64_t>());
  }
  std::printf(
      "figures: node lost after step %d; attempt 2 started %lld ms after the kill "
      "(heartbeat timeout 2 s); resumed from step %d\n",
      reached, static_cast<long long>(restarted_ms - killed_ms),
      NumberAfter(Logs(c, "ddp-nodeloss", 0, 2), "resumed from step "));
  for (int rank = 0; rank < 2; ++rank) {
    const std::string after = Logs(c, "ddp-nodeloss", rank, 2);
    const int resumed = NumberAfter(after, "resumed from step ");
    EXPECT_GE(resumed, reached - interval) << "lost more than one checkpoint interval\n" << after;
    EXPECT_LE(resumed, reached) << after;
    EXPECT_EQ(resumed % interval, 0) << after;
    EXPECT_EQ(LossByStep(after).begin()->first, resumed + 1) << after;
    EXPECT_NE(after.find("training finished at step " + std::to_string(steps)), std::string::npos)
        << after;
  }
}

TEST_F(PytorchDdpTest, PreemptedJobCheckpointsOnSigtermAndResumesFromThatStep) {
  Watchdog watchdog(180s, "pytorch preemption");
  LiveCluster::Options o;
  o.controller_args = {"--priority-preemption"};
  LiveCluster c(o);
  ASSERT_TRUE(c.WaitForReadyNodes(2));
  const int steps = 60;
  // Interval checkpoints at 50 only: the resume point can only be the SIGTERM checkpoint.
  Submit(c, Spec("ddp-victim", steps, 50, ", --min-step-seconds, \"0.1\""));
  ASSERT_TRUE(WaitFor([&] { return LastStep(PollLog(c, "ddp-victim", 0)) >= 10; }, 90))
      << PollLog(c, "ddp-victim", 0) << c.Logs();

  // A job of higher priority needs 4 of the 8 GPUs, all taken by the victim's gang.
  Submit(c, TrainingSpec("urgent", 1, 4, "echo urgent on GPUs $CUDA_VISIBLE_DEVICES; sleep 1",
                         "  priority: 100\n"));
  ASSERT_TRUE(c.WaitForPhase("default", "urgent", "Succeeded", 60))
      << c.Job("default", "urgent").dump(2) << c.Logs();
  ASSERT_TRUE(c.WaitForPhase("default", "ddp-victim", "Succeeded", 120))
      << c.Job("default", "ddp-victim").dump(2) << c.Logs();

  const Json victim = c.Job("default", "ddp-victim");
  EXPECT_EQ(victim["restarts"], 0) << "a preemption is not a failure restart";
  EXPECT_EQ(victim["attempt"], 2);
  bool preempted_event = false;
  for (const auto& e : victim["events"]) preempted_event |= e["type"] == "JobPreempted";
  EXPECT_TRUE(preempted_event) << victim["events"].dump(2);
  // The preemptor started on the victim's GPUs only once the victim's process there was gone.
  const Json urgent_task = c.Job("default", "urgent")["taskList"][0];
  int checked = 0;
  for (const auto& t : victim["taskList"]) {
    if (t["attempt"] != 1 || t["node"] != urgent_task["node"]) continue;
    EXPECT_EQ(t["gpus"], urgent_task["gpus"]);
    EXPECT_GE(urgent_task["startedMs"].get<std::int64_t>(), t["finishedMs"].get<std::int64_t>());
    ++checked;
  }
  EXPECT_EQ(checked, 1) << victim["taskList"].dump(2) << urgent_task.dump(2);

  const std::string first = Logs(c, "ddp-victim", 0, 1);
  const int saved = NumberAfter(first, "checkpoint saved at step ");
  ASSERT_GT(saved, 0) << first;
  EXPECT_NE(first.find("SIGTERM received: stopping after step " + std::to_string(saved)),
            std::string::npos)
      << first;
  EXPECT_NE(first.find("checkpoint saved at step " + std::to_string(saved) + " (SIGTERM)"),
            std::string::npos)
      << first;
  EXPECT_EQ(LastStep(first), saved) << first;
  std::printf(
      "figures: preemptor started %lld ms after its submission (victim's SIGTERM "
      "checkpoint at step %d included)\n",
      static_cast<long long>(urgent_task["startedMs"].get<std::int64_t>() -
                             c.Job("default", "urgent")["submitTimeMs"].get<std::int64_t>()),
      saved);
  for (int rank = 0; rank < 2; ++rank) {
    const std::string again = Logs(c, "ddp-victim", rank, 2);
    EXPECT_EQ(NumberAfter(again, "resumed from step "), saved) << again;
    EXPECT_NE(again.find("training finished at step " + std::to_string(steps)), std::string::npos)
        << again;
  }
}

// Issue 15 part 3: an elastic job of 1..2 workers is shrunk to 1 by a job of higher priority
// (without --priority-preemption) and grows back to 2 when it ends. Each resize is a SIGTERM
// checkpoint and a restart of every rank at the new WORLD_SIZE from it; no step is lost.
TEST_F(PytorchDdpTest, ElasticJobShrinksForAPriorityJobAndGrowsBackFromItsCheckpoints) {
  Watchdog watchdog(240s, "pytorch elastic");
  LiveCluster c;
  ASSERT_TRUE(c.WaitForReadyNodes(2));
  const int steps = 60;
  std::string spec = Spec("ddp-elastic", steps, 50, ", --min-step-seconds, \"0.1\"");
  Substitute(spec, "  workers: 2\n", "  workers: 2\n  elastic: {minWorkers: 1, maxWorkers: 2}\n");
  Submit(c, spec);
  ASSERT_TRUE(WaitFor([&] { return LastStep(PollLog(c, "ddp-elastic", 0)) >= 10; }, 90))
      << PollLog(c, "ddp-elastic", 0) << c.Logs();

  // Needs 4 of the 8 GPUs, all the elastic job's; holds them until the test lets it go.
  const std::string release = ckpt_.path() + "/release-urgent";
  Submit(c, TrainingSpec("urgent", 1, 4, "while [ ! -f " + release + " ]; do sleep 0.2; done",
                         "  priority: 100\n"));
  ASSERT_TRUE(c.WaitForPhase("default", "urgent", "Running", 60))
      << c.Job("default", "ddp-elastic").dump(2) << c.Logs();
  // Trains on at one worker for a few steps past its resume point, then the urgent job ends.
  ASSERT_TRUE(WaitFor(
      [&] {
        const Json j = c.Job("default", "ddp-elastic");
        if (j.value("attempt", 0) != 2 || j.value("runningTasks", 0) != 1) return false;
        const std::string log = PollLog(c, "ddp-elastic", 0);
        const int resumed = NumberAfter(log, "resumed from step ");
        return resumed > 0 && LastStep(log) >= resumed + 5;
      },
      90))
      << c.Job("default", "ddp-elastic").dump(2) << PollLog(c, "ddp-elastic", 0);
  std::ofstream(release) << "go\n";
  ASSERT_TRUE(c.WaitForPhase("default", "ddp-elastic", "Succeeded", 150))
      << c.Job("default", "ddp-elastic").dump(2) << c.Logs();

  const Json job = c.Job("default", "ddp-elastic");
  EXPECT_EQ(job["attempt"], 3) << job["events"].dump(2);
  EXPECT_EQ(job["restarts"], 0) << "a resize is not a failure restart";
  int resizing = 0, resized = 0;
  for (const auto& e : job["events"]) {
    resizing += e["type"] == "JobResizing";
    resized += e["type"] == "JobResized";
  }
  EXPECT_EQ(resizing, 2) << job["events"].dump(2);
  EXPECT_EQ(resized, 2) << job["events"].dump(2);

  // Attempt 1 (2 ranks) stops at its SIGTERM checkpoint; attempt 2 (1 rank) resumes there and
  // stops at its own; attempt 3 (2 ranks again) resumes there and finishes.
  const std::string first = Logs(c, "ddp-elastic", 0, 1);
  const int saved1 = NumberAfter(first, "checkpoint saved at step ");
  ASSERT_GT(saved1, 0) << first;
  EXPECT_NE(first.find("WORLD_SIZE=2"), std::string::npos) << first;
  EXPECT_NE(first.find("(SIGTERM)"), std::string::npos) << first;
  EXPECT_EQ(LastStep(first), saved1) << first;
  const std::string second = Logs(c, "ddp-elastic", 0, 2);
  EXPECT_NE(second.find("RANK=0 WORLD_SIZE=1"), std::string::npos) << second;
  EXPECT_NE(second.find("resumed from step " + std::to_string(saved1) + " (saved by 2 ranks"),
            std::string::npos)
      << second;
  EXPECT_EQ(LossByStep(second).begin()->first, saved1 + 1) << second;
  const int saved2 = NumberAfter(second, "checkpoint saved at step ");
  EXPECT_GE(saved2, saved1 + 5) << second;
  EXPECT_EQ(LastStep(second), saved2) << second;
  for (int rank = 0; rank < 2; ++rank) {
    const std::string third = Logs(c, "ddp-elastic", rank, 3);
    EXPECT_NE(third.find("RANK=" + std::to_string(rank) + " WORLD_SIZE=2"), std::string::npos)
        << third;
    EXPECT_NE(third.find("resumed from step " + std::to_string(saved2) + " (saved by 1 ranks"),
              std::string::npos)
        << third;
    EXPECT_EQ(LossByStep(third).begin()->first, saved2 + 1) << third;
    EXPECT_NE(third.find("training finished at step " + std::to_string(steps)), std::string::npos)
        << third;
  }
  std::printf("figures: 2 ranks to step %d, 1 rank to step %d, 2 ranks to step %d\n", saved1,
              saved2, steps);
}

TEST_F(PytorchDdpTest, MultiProcessWorkersGetLocalRanks) {
  Watchdog watchdog(150s, "pytorch multi-process workers");
  LiveCluster c;
  ASSERT_TRUE(c.WaitForReadyNodes(2));
  Submit(c, Spec("ddp-multi", 8, 4, "", 2));
  ASSERT_TRUE(c.WaitForPhase("default", "ddp-multi", "Succeeded", 120))
      << c.Job("default", "ddp-multi").dump(2) << c.Logs();
  for (int node_rank = 0; node_rank < 2; ++node_rank) {
    const std::string log = Logs(c, "ddp-multi", node_rank);
    for (int local = 0; local < 2; ++local) {
      const std::string rank = std::to_string(2 * node_rank + local);
      EXPECT_NE(log.find("RANK=" + rank + " WORLD_SIZE=4 LOCAL_RANK=" + std::to_string(local) +
                         " LOCAL_WORLD_SIZE=2 NODE_RANK=" + std::to_string(node_rank)),
                std::string::npos)
          << log;
      EXPECT_NE(log.find("[rank " + rank + "] training finished at step 8"), std::string::npos)
          << log;
    }
    EXPECT_NE(log.find("rendezvous done: 4 ranks"), std::string::npos) << log;
  }
}

}  // namespace
}  // namespace tessera::testing
