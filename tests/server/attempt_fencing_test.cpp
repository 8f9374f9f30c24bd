// ctest-labels: integration security
// Fencing by attempt: an agent that comes back after its node was declared lost, and whose
// task's attempt was replaced on another node meanwhile, kills the orphaned process at once
// (SIGKILL, no grace period), so two copies of a rank do not run on together, and the
// replacement runs on undisturbed.
#include <gtest/gtest.h>
#include <signal.h>

#include "server/live_harness.h"

namespace tessera::testing {
namespace {

using namespace std::chrono_literals;

TEST(AttemptFencingTest, AReturningAgentKillsTheReplacedAttemptAtOnce) {
  Watchdog watchdog(60s, "fencing test");
  LiveCluster c({.agents = 2, .gpus = "1xH100", .heartbeat_timeout_s = 1.5});
  ASSERT_TRUE(c.WaitForReadyNodes(2)) << c.Logs();
  // The rank ignores SIGTERM: a stop would leave it running for the stray's 10 s of grace.
  ASSERT_EQ(c.Submit(TrainingSpec("ranked", 1, 1, "trap '' TERM; exec sleep 120", "", 3)).status,
            201);
  Json first;
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const auto& t : c.TaskList("default", "ranked"))
          if (t["state"] == "Running" && t.value("pid", 0) > 0) first = t;
        return !first.is_null();
      },
      20))
      << c.Logs();
  const int lost_agent = first["node"] == c.NodeName(0) ? 0 : 1;
  const pid_t orphan = first["pid"].get<pid_t>();
  c.RecordTaskGroups();

  ASSERT_EQ(::kill(c.agent_pid(lost_agent), SIGSTOP), 0);
  Json second;
  const bool replaced = WaitFor(
      [&] {
        for (const auto& t : c.TaskList("default", "ranked"))
          if (t["attempt"] == 2 && t["state"] == "Running" && t.value("pid", 0) > 0) second = t;
        return !second.is_null();
      },
      15);
  ::kill(c.agent_pid(lost_agent), SIGCONT);
  ASSERT_TRUE(replaced) << c.Job("default", "ranked").dump(2) << c.Logs();
  EXPECT_NE(second["node"], first["node"]);
  EXPECT_TRUE(ProcessAlive(orphan)) << "the old copy ran on while its agent was paused";

  // Back, the agent learns that attempt 1 was replaced and kills it: not after 10 s of SIGTERM.
  const auto resumed = std::chrono::steady_clock::now();
  EXPECT_TRUE(WaitFor([&] { return !ProcessAlive(orphan); }, 3))
      << "attempt 1 still running beside attempt 2\n"
      << c.Logs();
  EXPECT_LT(std::chrono::steady_clock::now() - resumed, 3s);
  std::this_thread::sleep_for(500ms);
  const Json job = c.Job("default", "ranked");
  EXPECT_EQ(job["phase"], "Running");
  EXPECT_EQ(job["attempt"], 2) << "the replacement was not disturbed";
  EXPECT_TRUE(ProcessAlive(second["pid"].get<pid_t>()));
}

}  // namespace
}  // namespace tessera::testing
