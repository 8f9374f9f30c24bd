// ctest-labels: integration
// Queue orders that need run times, on the live cluster (the real tesserad and tessera-agent,
// sleep jobs on simulated GPUs; docs/queue-policies.md): backfill reads spec.timeLimitSeconds
// as a job's expected end (as Slurm does), srtf orders by spec.expectedDurationSeconds and
// refuses at submit a job that gives no estimate, las preempts by attained GPU-time with the
// grace period to checkpoint, and the preempted job resumes from its checkpoint.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "server/live_harness.h"

namespace tessera::testing {
namespace {

using namespace std::chrono_literals;

std::string Phase(LiveCluster& c, const std::string& name) {
  return c.Job("default", name).value("phase", "");
}

std::int64_t StartMs(LiveCluster& c, const std::string& name) {
  return c.Job("default", name).value("startTimeMs", std::int64_t{0});
}

int CountEvents(const Json& job, const std::string& type) {
  int n = 0;
  for (const auto& e : job["events"]) n += e["type"] == type;
  return n;
}

LiveCluster::Options PolicyCluster(const std::string& policy, std::vector<std::string> more = {}) {
  LiveCluster::Options o;
  o.controller_args = {"--queue-policy", policy};
  o.controller_args.insert(o.controller_args.end(), more.begin(), more.end());
  return o;
}

TEST(QueuePoliciesLiveTest, BackfillReadsTimeLimitsAsExpectedEnds) {
  Watchdog watchdog(60s, "backfill live");
  LiveCluster c(PolicyCluster("backfill"));  // 2 nodes of 4 GPUs
  ASSERT_TRUE(c.WaitForReadyNodes(2)) << c.Logs();
  ASSERT_EQ(c.Submit(TrainingSpec("long", 1, 4, "sleep 4", "  timeLimitSeconds: 6\n")).status, 201);
  ASSERT_TRUE(c.WaitForPhase("default", "long", "Running")) << c.Logs();
  // The head needs both nodes: it waits for `long`, with a reservation at its expected end.
  ASSERT_EQ(c.Submit(TrainingSpec("head", 2, 4, "sleep 1")).status, 201);
  // Ends well before the head's reservation: backfilled now. Without a time limit the other
  // one could delay the head and waits behind it.
  ASSERT_EQ(c.Submit(TrainingSpec("short", 1, 4, "sleep 1", "  timeLimitSeconds: 2\n")).status,
            201);
  ASSERT_EQ(c.Submit(TrainingSpec("unbounded", 1, 4, "sleep 1")).status, 201);
  ASSERT_TRUE(c.WaitForPhase("default", "short", "Succeeded", 10)) << c.Logs();
  EXPECT_EQ(Phase(c, "head"), "Pending");
  EXPECT_EQ(Phase(c, "unbounded"), "Pending") << "it would have delayed the head";
  ASSERT_TRUE(c.WaitForPhase("default", "head", "Succeeded", 20)) << c.Logs();
  ASSERT_TRUE(c.WaitForPhase("default", "unbounded", "Succeeded", 20)) << c.Logs();
  EXPECT_LT(StartMs(c, "short"), StartMs(c, "head"));
  EXPECT_GE(StartMs(c, "unbounded"), StartMs(c, "head"));
}

TEST(QueuePoliciesLiveTest, SrtfNeedsAnEstimateAndRunsTheShortestFirst) {
  Watchdog watchdog(60s, "srtf live");
  LiveCluster c(PolicyCluster("srtf"));
  ASSERT_TRUE(c.WaitForReadyNodes(2)) << c.Logs();
  auto refused = c.Submit(TrainingSpec("no-estimate", 1, 4, "sleep 1"));
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_NE(refused.body.find("spec.expectedDurationSeconds"), std::string::npos) << refused.body;
  EXPECT_NE(refused.body.find("'srtf'"), std::string::npos) << refused.body;
  EXPECT_EQ(c.Get("/v1/jobs/default/no-estimate").status, 404);

  ASSERT_EQ(
      c.Submit(TrainingSpec("long", 2, 4, "exec sleep 30", "  expectedDurationSeconds: 600\n"))
          .status,
      201);
  ASSERT_TRUE(c.WaitForPhase("default", "long", "Running")) << c.Logs();
  // Shorter than what `long` has left: it preempts `long` (srtf is preemptive).
  ASSERT_EQ(
      c.Submit(TrainingSpec("short", 1, 4, "sleep 1", "  expectedDurationSeconds: 5\n")).status,
      201);
  ASSERT_TRUE(c.WaitForPhase("default", "short", "Succeeded", 20)) << c.Logs();
  const Json long_job = c.Job("default", "long");
  EXPECT_EQ(CountEvents(long_job, "JobPreempted"), 1) << long_job["events"].dump(2);
  ASSERT_TRUE(WaitFor([&] { return c.Job("default", "long").value("attempt", 0) == 2; }, 10))
      << c.Job("default", "long").dump(2);
  EXPECT_EQ(Phase(c, "long"), "Running");
}

TEST(QueuePoliciesLiveTest, LasPreemptsByAttainedServiceAndTheVictimResumesFromItsCheckpoint) {
  Watchdog watchdog(60s, "las live");
  TempDir ckpt("tessera-las-ckpt");
  const std::string config = ckpt.path() + "/scheduler.yaml";
  std::ofstream(config) << "queuePolicy: las\nlasThresholdsGpuSeconds: [8]\n";
  LiveCluster c(PolicyCluster("las", {"--config", config}));
  ASSERT_TRUE(c.WaitForReadyNodes(2)) << c.Logs();
  // Counts ticks; on SIGTERM saves its count (its checkpoint) and exits; resumes from it.
  const std::string file = ckpt.path() + "/count";
  const std::string script = "n=$(cat " + file +
                             " 2>/dev/null || echo 0); echo resumed from $n; "
                             "trap '[ \"$RANK\" = 0 ] && echo $n > " +
                             file +
                             "; echo checkpoint $n; exit 0' TERM; "
                             "while [ $n -lt 100 ]; do n=$((n+1)); sleep 0.1; done";
  // 8 GPUs: past the 8 GPU-second threshold after one second, in the second queue.
  ASSERT_EQ(c.Submit(TrainingSpec("old", 2, 4, script)).status, 201);
  ASSERT_TRUE(c.WaitForPhase("default", "old", "Running")) << c.Logs();
  std::this_thread::sleep_for(1500ms);
  // A new job (no service yet, the first queue) goes ahead of it.
  ASSERT_EQ(c.Submit(TrainingSpec("new", 1, 4, "sleep 1")).status, 201);
  ASSERT_TRUE(c.WaitForPhase("default", "new", "Succeeded", 20)) << c.Logs();
  ASSERT_TRUE(WaitFor([&] { return c.Job("default", "old").value("attempt", 0) == 2; }, 10))
      << c.Job("default", "old").dump(2);
  const Json old_job = c.Job("default", "old");
  EXPECT_EQ(CountEvents(old_job, "JobPreempted"), 1) << old_job["events"].dump(2);
  EXPECT_EQ(old_job["restarts"], 0);
  const std::string saved = ReadFile(file);
  ASSERT_FALSE(saved.empty());
  const int at = std::stoi(saved);
  EXPECT_GT(at, 5) << "ran over a second before the preemption";
  ASSERT_TRUE(WaitFor(
      [&] {
        return c.Get("/v1/logs/default/old?rank=0")
                   .body.find("resumed from " + saved.substr(0, saved.find('\n'))) !=
               std::string::npos;
      },
      10))
      << c.Get("/v1/logs/default/old?rank=0").body;
}

}  // namespace
}  // namespace tessera::testing
