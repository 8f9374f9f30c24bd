// The failures experiment on tiny scenarios worked by hand: a 16-GPU gang (2 nodes of 8) that
// checkpoints every 100 s at a cost of 10 s, fails once at a known time, and recovers under each
// policy; plus leaf switches, waiting for a repair, the drain rule, determinism, Young/Daly.
//
// Common timeline before the failure at t = 250 s: compute 0–100, checkpoint 100–110
// (durable 100), compute 110–210, checkpoint 210–220 (durable 200), compute 220–250: 230 s of
// progress, of which 30 s are lost. Detection takes 5 s, a cold start 30 s, a restart 20 s.
#include "sim/failures/failures_experiment.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "sim/failures/failures_summary.h"
#include "sim/failures/measured_recovery_times.h"
#include "sim/report/html_report.h"
#include "sim/summary.h"

namespace tessera {
namespace {

Cluster Nodes(int n) {
  Cluster c;
  for (int i = 0; i < n; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "node-%04d", i);
    EXPECT_TRUE(c.AddNode(name, "H100", 8, 64000, 1 << 20));
  }
  return c;
}

FailuresOptions Small() {
  FailuresOptions o;
  o.job_gpus = {16};
  o.horizon = 1000 * kSecond;
  o.checkpoint_interval = 100 * kSecond;
  o.checkpoint_cost = 10 * kSecond;
  o.detect = 5 * kSecond;
  o.restart = 20 * kSecond;
  o.cold_start = 30 * kSecond;
  o.cold_start_per_node = 0;
  o.warm_start = 0;
  o.spares_per_leaf = 1;
  o.recovery.shrink_unit = 1;
  o.record_log = true;
  return o;
}

FailureEvent At(double seconds, Component c, std::uint32_t target, double repair_seconds = 1e4) {
  FailureEvent e;
  e.time = FromSeconds(seconds);
  e.component = c;
  e.target = target;
  e.repair = FromSeconds(repair_seconds);
  return e;
}

FailuresRun Simulate(const Cluster& c, const std::vector<FailureEvent>& events,
                     const std::string& policy, const FailuresOptions& o = Small()) {
  const RecoveryTopology t = BuildRecoveryTopology(c, o.topology);
  auto r = SimulateFailures(c, t, events, *FailurePreset("llama3"), o, policy);
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  return r ? *r : FailuresRun{};
}

// productive + redone + checkpoint + recovery idle + shrunk = GPUs × wall time, exactly.
void ExpectBooksBalance(const FailuresRun& r, double gpus, double seconds) {
  const double sum = r.productive_gpu_hours + r.redone_gpu_hours + r.checkpoint_gpu_hours +
                     r.recovery_idle_gpu_hours + r.shrunk_gpu_hours;
  EXPECT_NEAR(sum, gpus * seconds / 3600, 1e-9);
}

TEST(FailuresExperimentTest, NoFailuresOnlyCheckpointsCost) {
  // 1,000 s: nine full cycles of 100 + 10 (990 s) and 10 s of compute → 910 s of progress.
  const FailuresRun r = Simulate(Nodes(4), {}, "replace");
  EXPECT_DOUBLE_EQ(r.ettr, 0.91);
  EXPECT_EQ(r.interruptions, 0);
  EXPECT_NEAR(r.checkpoint_gpu_hours, 90.0 * 16 / 3600, 1e-12);
  ExpectBooksBalance(r, 16, 1000);
}

TEST(FailuresExperimentTest, ReplaceLosesTheWorkSinceTheCheckpointAndStartsANodeCold) {
  // Node 0 fails at 250: 30 s lost. Detected at 255, rank 0 moves to node 2 (cold: 30 s), the
  // gang restarts at 255 + 30 + 20 = 305: recovery latency 55 s. From 305, six cycles of
  // 100 + 10 end at 965, then 35 s of compute: progress 200 + 600 + 35 = 835 → ETTR 0.835.
  const FailuresRun r = Simulate(Nodes(4), {At(250, Component::kGpu, 0)}, "replace");
  EXPECT_DOUBLE_EQ(r.ettr, 0.835);
  ASSERT_EQ(r.recovery_seconds.size(), 1U);
  EXPECT_DOUBLE_EQ(r.recovery_seconds[0], 55);
  EXPECT_EQ(r.replacements, 1);
  EXPECT_EQ(r.replacements_off_leaf, 0);
  EXPECT_NEAR(r.redone_gpu_hours, 30.0 * 16 / 3600, 1e-12);
  EXPECT_NEAR(r.recovery_idle_gpu_hours, 55.0 * 16 / 3600, 1e-12);
  EXPECT_NEAR(r.checkpoint_gpu_hours, 8 * 10.0 * 16 / 3600, 1e-12);  // 2 before, 6 after
  ExpectBooksBalance(r, 16, 1000);
  const std::vector<std::string> log = {
      "250000 failure gpu on node-0000",
      "250000 pretrain stops, loses 30 s of training",
      "255000 pretrain replace: replace 1 rank (0 hot spare, 1 cold; 0 off-leaf)",
      "305000 pretrain runs again on 2 workers after 55 s",
  };
  EXPECT_EQ(r.log, log);
}

TEST(FailuresExperimentTest, AHotSpareSavesTheColdStart) {
  // The pool holds node 3 (one spare per leaf, the leaf's last node). Rank 0 moves there
  // warm: restart at 255 + 20 = 275 (latency 25). From 275, six cycles end at 935, then 65 s:
  // 200 + 600 + 65 = 865. The pool refills with node 2, so one node (8 GPUs) idles throughout.
  const FailuresRun r = Simulate(Nodes(4), {At(250, Component::kGpu, 0)}, "spares");
  EXPECT_DOUBLE_EQ(r.ettr, 0.865);
  EXPECT_EQ(r.spares_initial, 1);
  EXPECT_EQ(r.spares_used, 1);
  EXPECT_DOUBLE_EQ(r.recovery_seconds.at(0), 25);
  EXPECT_NEAR(r.spare_idle_gpu_hours, 8 * 1000.0 / 3600, 1e-9);
  ExpectBooksBalance(r, 16, 1000);
}

TEST(FailuresExperimentTest, SparesPerLeafGiveWayWhenTheGangNeedsTheRoom) {
  // 36 nodes in leaves of 4 (9 leaves): one spare per leaf would leave 27 nodes for a 32-node
  // gang, so the last 5 leaves give theirs back: 4 spares. With --max-spares 2, two.
  FailuresOptions o = Small();
  o.topology.nodes_per_leaf = 4;
  o.job_gpus = {256};
  EXPECT_EQ(Simulate(Nodes(36), {}, "spares", o).spares_initial, 4);
  o.max_spares = 2;
  EXPECT_EQ(Simulate(Nodes(36), {}, "spares", o).spares_initial, 2);
  // With room to spare, one per leaf: 9.
  o.max_spares = -1;
  o.job_gpus = {16};
  EXPECT_EQ(Simulate(Nodes(36), {}, "spares", o).spares_initial, 9);
}

TEST(FailuresExperimentTest, SeveralGangsEachKeepTheirOwnBooks) {
  // Gang 0 on nodes 0-1, gang 1 on nodes 2-3. Node 2 fails at 250: gang 1 as in the replace
  // case (0.835), gang 0 untouched (0.91); overall, GPU-weighted: 0.8725.
  FailuresOptions o = Small();
  o.job_gpus = {16, 16};
  const FailuresRun r = Simulate(Nodes(6), {At(250, Component::kGpu, 2)}, "replace", o);
  ASSERT_EQ(r.jobs.size(), 2U);
  EXPECT_DOUBLE_EQ(r.jobs[0].ettr, 0.91);
  EXPECT_DOUBLE_EQ(r.jobs[1].ettr, 0.835);
  EXPECT_EQ(r.jobs[1].interruptions, 1);
  EXPECT_DOUBLE_EQ(r.ettr, 0.8725);
  ExpectBooksBalance(r, 32, 1000);
}

TEST(FailuresExperimentTest, RequeueRestartsEveryNodeCold) {
  // Cold start is per gang here (no per-node term), so requeue's latency equals replace's: 55.
  // With 1 s per cold node, requeue pays 30 + 2 and replace 30 + 1.
  FailuresOptions o = Small();
  FailuresRun r = Simulate(Nodes(4), {At(250, Component::kGpu, 0)}, "requeue", o);
  EXPECT_EQ(r.requeues, 1);
  EXPECT_DOUBLE_EQ(r.recovery_seconds.at(0), 55);
  o.cold_start_per_node = kSecond;
  EXPECT_DOUBLE_EQ(
      Simulate(Nodes(4), {At(250, Component::kGpu, 0)}, "requeue", o).recovery_seconds.at(0), 57);
  EXPECT_DOUBLE_EQ(
      Simulate(Nodes(4), {At(250, Component::kGpu, 0)}, "replace", o).recovery_seconds.at(0), 56);
}

TEST(FailuresExperimentTest, ShrinkRunsOnAtHalfSpeedThenGrowsAtTheNextCheckpoint) {
  // Replicas of 1 worker. At 255 the gang shrinks to node 1 and restarts at 275 (latency 25)
  // at half speed: 275–375 adds 50 (durable 250 at 385). At 385 it grows onto node 2 (cold):
  // back at 385 + 30 + 20 = 435. From 435: five cycles to 985, then 15 s → 250 + 500 + 15 = 765.
  const FailuresRun r = Simulate(Nodes(4), {At(250, Component::kGpu, 0)}, "shrink");
  EXPECT_DOUBLE_EQ(r.ettr, 0.765);
  EXPECT_EQ(r.shrinks, 1);
  EXPECT_EQ(r.grows, 1);
  ASSERT_EQ(r.recovery_seconds.size(), 1U);  // the grow is planned, not a recovery
  EXPECT_DOUBLE_EQ(r.recovery_seconds[0], 25);
  // Idle: 25 s × 16 GPUs, then the grow's 50 s × 8 GPUs; shrunk: 8 GPUs missing for
  // 100 + 10 + 50 s.
  EXPECT_NEAR(r.recovery_idle_gpu_hours, (25.0 * 16 + 50.0 * 8) / 3600, 1e-12);
  EXPECT_NEAR(r.shrunk_gpu_hours, 160.0 * 8 / 3600, 1e-12);
  ExpectBooksBalance(r, 16, 1000);
}

TEST(FailuresExperimentTest, AFailureDuringACheckpointLosesThatCheckpoint) {
  // Fails at 105, inside the first checkpoint (100–110): all 100 s are lost. Restart at
  // 105 + 5 + 30 + 20 = 160; seven cycles to 930, then 70 s: 0 + 700 + 70 = 770.
  const FailuresRun r = Simulate(Nodes(4), {At(105, Component::kHost, 1)}, "replace");
  EXPECT_DOUBLE_EQ(r.ettr, 0.77);
  ASSERT_FALSE(r.timeline.empty());
  EXPECT_EQ(r.timeline[0].event, "failure");
  EXPECT_DOUBLE_EQ(r.timeline[0].lost_seconds, 100);
  ExpectBooksBalance(r, 16, 1000);
}

TEST(FailuresExperimentTest, ASoftwareCrashRestartsInPlace) {
  // No node is lost: replace restarts in place (5 + 20 = 25 s, as the spare case: 0.865);
  // requeue still starts the whole gang cold (55 s).
  const FailuresRun r = Simulate(Nodes(4), {At(250, Component::kSoftware, 1, 0)}, "replace");
  EXPECT_EQ(r.restarts_in_place, 1);
  EXPECT_EQ(r.replacements, 0);
  EXPECT_DOUBLE_EQ(r.ettr, 0.865);
  const FailuresRun q = Simulate(Nodes(4), {At(250, Component::kSoftware, 1, 0)}, "requeue");
  EXPECT_DOUBLE_EQ(q.recovery_seconds.at(0), 55);
  // A crash on a node the job does not use changes nothing.
  const FailuresRun idle = Simulate(Nodes(4), {At(250, Component::kSoftware, 3, 0)}, "replace");
  EXPECT_DOUBLE_EQ(idle.ettr, 0.91);
  EXPECT_EQ(idle.failures_ignored, 1);
}

TEST(FailuresExperimentTest, ALeafSwitchTakesOutEveryNodeUnderIt) {
  // Leaves of 4 nodes; a 6-node gang on leaf 0 (nodes 0-3) and half of leaf 1 (4, 5). Leaf 0's
  // switch fails: ranks 0-3 move, off-leaf, to the free nodes 6, 7 (leaf 1) and 8, 9 (leaf 2).
  FailuresOptions o = Small();
  o.topology.nodes_per_leaf = 4;
  o.job_gpus = {48};
  const FailuresRun r =
      Simulate(Nodes(12), {At(250, Component::kLeafSwitch, 0, 600)}, "replace", o);
  EXPECT_EQ(r.interruptions, 1);
  EXPECT_EQ(r.job_failures, 1);
  EXPECT_EQ(r.replacements, 4);
  EXPECT_EQ(r.replacements_off_leaf, 4);
  EXPECT_DOUBLE_EQ(r.ettr, 0.835);
  // A gang entirely under the failed switch has no rank left to keep: it is requeued whole.
  o.job_gpus = {16};
  const FailuresRun whole =
      Simulate(Nodes(12), {At(250, Component::kLeafSwitch, 0, 600)}, "replace", o);
  EXPECT_EQ(whole.requeues, 1);
  EXPECT_EQ(whole.replacements, 0);
}

TEST(FailuresExperimentTest, WithNoFreeNodeTheGangWaitsForTheRepair) {
  // Two nodes, both used. Node 0 fails at 250 for 100 s. At 255 nothing can replace it: wait.
  // It is back at 350 and starts cold: 350 + 30 + 20 = 400 (latency 150). From 400: five
  // cycles to 950, then 50 s → 200 + 500 + 50 = 750.
  const FailuresRun r = Simulate(Nodes(2), {At(250, Component::kGpu, 0, 100)}, "replace");
  EXPECT_EQ(r.waits, 1);
  EXPECT_DOUBLE_EQ(r.recovery_seconds.at(0), 150);
  EXPECT_DOUBLE_EQ(r.ettr, 0.75);
  ExpectBooksBalance(r, 16, 1000);
}

TEST(FailuresExperimentTest, DrainTakesARepeatOffenderOutAndFixesIt) {
  // Node 0 fails at 100 (repair 50 s; the gang moves to node 2) and, idle, again at 400: two
  // failures within the window → drained for a deep repair (100 s here), rebuilt: the lemon
  // failure at 600 no longer happens; the ordinary one at 700 does.
  FailuresOptions o = Small();
  o.drain_repair = 100 * kSecond;
  std::vector<FailureEvent> events = {
      At(100, Component::kGpu, 0, 50), At(400, Component::kGpu, 0, 50),
      At(600, Component::kGpu, 0, 50), At(700, Component::kHost, 0, 50)};
  events[2].lemon = true;
  const FailuresRun drained = Simulate(Nodes(4), events, "replace+drain", o);
  EXPECT_EQ(drained.drained, 1);
  EXPECT_EQ(drained.failures, 3);
  EXPECT_EQ(drained.failures_ignored, 1);
  EXPECT_EQ(drained.policy, "replace+drain");
  const FailuresRun kept = Simulate(Nodes(4), events, "replace", o);
  EXPECT_EQ(kept.drained, 0);
  EXPECT_EQ(kept.failures, 4);
}

FailureSource Harsh() {
  // Failures often enough that a 128-node gang sees a few a day.
  FailureModel m = *FailurePreset("llama3");
  for (Component c : kAllComponents) m[c].rate_per_hour *= 10;
  return FailureSource{"harsh", m, {}, m};
}

FailuresOptions Study() {
  FailuresOptions o;
  o.job_gpus = {1024};
  o.horizon = 5 * kDay;
  o.policies = {"requeue", "replace", "spares", "shrink", "spares+drain"};
  o.seeds = 2;
  o.seed = 11;
  return o;
}

nlohmann::json Summary(const FailuresResult& r, const FailuresOptions& o) {
  nlohmann::json j = FailuresHeadJson(r, o);
  for (const auto& p : r.policies) j["results"].push_back(FailuresPolicyJson(p, r, o));
  return WithoutWallClock(j);
}

TEST(FailuresExperimentTest, SameSeedSameSummary) {
  const Cluster c = Nodes(136);
  const FailuresOptions o = Study();
  auto a = RunFailuresExperiment(c, Harsh(), o);
  auto b = RunFailuresExperiment(c, Harsh(), o);
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_TRUE(b);
  EXPECT_EQ(Summary(*a, o).dump(), Summary(*b, o).dump());
  FailuresOptions other = o;
  other.seed = 12;
  auto d = RunFailuresExperiment(c, Harsh(), other);
  ASSERT_TRUE(d);
  EXPECT_NE(Summary(*a, o)["results"].dump(), Summary(*d, other)["results"].dump());
  // Every result has the documented fields. (Keep the summary alive: a range-for over a
  // member of a temporary would read freed memory.)
  const auto summary = Summary(*a, o);
  for (const auto& r : summary["results"]) {
    for (const char* key : {"policy", "ettr", "gpu_hours_lost"})
      EXPECT_TRUE(r.contains(key)) << key;
    for (const char* key : {"mean", "p50", "p99"}) EXPECT_TRUE(r["recovery_seconds"].contains(key));
    EXPECT_GT(r["ettr"].get<double>(), 0.3);
    EXPECT_LT(r["ettr"].get<double>(), 1.0);
  }
}

TEST(FailuresExperimentTest, TheReportShowsTheTimelineOfFailuresAndRecoveries) {
  const Cluster c = Nodes(136);
  FailuresOptions o = Study();
  o.seeds = 1;
  o.policies = {"replace", "spares"};
  auto r = RunFailuresExperiment(c, Harsh(), o);
  ASSERT_TRUE(r) << r.error().message;
  nlohmann::json summary = Summary(*r, o);
  summary["experiment"] = "failures";
  const std::string html = RenderHtmlReport(summary);
  for (const char* part :
       {"Failures and recoveries", "chart-training-lost", "chart-checkpoint-sweep",
        "Timeline of failures and recoveries", "<details>", "replace: replace 1 rank"}) {
    EXPECT_NE(html.find(part), std::string::npos) << part;
  }
}

TEST(FailuresExperimentTest, YoungDalyFromTheModelAndTheSweepAroundIt) {
  // Only software crashes, 1e-3 per node-hour: a 128-node gang fails 0.128 times an hour,
  // M = 28,125 s. With δ = 5 s, Young/Daly = sqrt(2 · 5 · 28,125) = 530.33 s.
  FailureModel m = *FailurePreset("none");
  m[Component::kSoftware].rate_per_hour = 1e-3;
  FailuresOptions o = Study();
  o.policies = {"replace"};
  auto r = RunFailuresExperiment(Nodes(128), FailureSource{"sw", m, {}, m}, o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_NEAR(r->job_mtbf_seconds, 28125, 1e-6);
  EXPECT_NEAR(ToSeconds(r->young_daly_interval), 530.33, 0.01);
  EXPECT_EQ(r->checkpoint_interval, r->young_daly_interval);
  const auto& p = r->policies.at(0);
  ASSERT_EQ(p.sweep.size(), o.sweep_factors.size());
  double best = 0;
  for (const auto& [interval, ettr] : p.sweep) best = std::max(best, ettr);
  bool found = false;
  for (const auto& [interval, ettr] : p.sweep) found |= interval == p.best_interval && ettr == best;
  EXPECT_TRUE(found);
}

TEST(FailuresExperimentTest, RefusesAJobTheClusterCannotHold) {
  FailuresOptions o = Study();
  o.job_gpus = {2048};
  auto r = RunFailuresExperiment(Nodes(128), Harsh(), o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("cannot hold"), std::string::npos) << r.error().message;
  o.job_gpus = {1020};
  EXPECT_FALSE(RunFailuresExperiment(Nodes(136), Harsh(), o));  // not whole nodes
  o.job_gpus = {1024};
  o.policies = {"pray"};
  EXPECT_FALSE(RunFailuresExperiment(Nodes(136), Harsh(), o));
}

TEST(FailureSourceTest, PresetsModelsAndFiles) {
  const Cluster c = Nodes(16);
  const RecoveryTopology t = BuildRecoveryTopology(c);
  auto preset = LoadFailureSource("llama3", c, t, kDay);
  ASSERT_TRUE(preset);
  EXPECT_TRUE(preset->model);
  EXPECT_FALSE(LoadFailureSource("llama9", c, t, kDay));

  const std::string csv = ::testing::TempDir() + "/failure_source_test.csv";
  std::ofstream(csv) << "time_seconds,component,target\n60,gpu,node-0003\n90,fan,node-0001\n";
  auto bad = LoadFailureSource(csv, c, t, kDay);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find(csv + ":3: field 'component'"), std::string::npos)
      << bad.error().message;
  std::ofstream(csv) << "time_seconds,component,target\n60,gpu,node-0003\n";
  auto good = LoadFailureSource(csv, c, t, kDay);
  ASSERT_TRUE(good);
  EXPECT_FALSE(good->model);
  EXPECT_EQ(good->events.size(), 1U);

  const std::string yaml = ::testing::TempDir() + "/failure_source_test.yaml";
  std::ofstream(yaml) << "base: llama3\ncomponents:\n  gpu: {rate_per_hour: -2}\n";
  auto bad_yaml = LoadFailureSource(yaml, c, t, kDay);
  ASSERT_FALSE(bad_yaml);
  EXPECT_NE(bad_yaml.error().message.find(yaml + ":3:"), std::string::npos);
}

TEST(FailuresExperimentTest, AFailureFileReplaysExactlyAndGivesTheObservedMtbf) {
  // Three failures hit the gang in 5 days: MTBF = 5 d / 3 = 144,000 s.
  FailuresOptions o = Study();
  o.policies = {"replace", "spares"};
  o.job_gpus = {64};
  const Cluster c = Nodes(16);
  FailureSource s{"incident.csv",
                  std::nullopt,
                  {At(3600, Component::kGpu, 0), At(7200, Component::kHost, 1),
                   At(86400, Component::kSoftware, 2, 0), At(90000, Component::kGpu, 15)},
                  *FailurePreset("llama3")};
  auto r = RunFailuresExperiment(c, s, o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->policies[0].seeds, 1);  // a file is replayed once
  EXPECT_NEAR(r->job_mtbf_seconds, 144000, 1e-6);
  EXPECT_EQ(r->policies[0].first.interruptions, 3);
  EXPECT_EQ(r->policies[0].first.failures, 4);
}

// `--recovery-times measured`: the file `tessera bench recovery --write-preset` wrote, built in.
// Its detection is a live measurement: at least the heartbeat timeout the bench ran with.
TEST(MeasuredRecoveryTimesTest, TheBuiltInPresetIsALiveMeasurement) {
  auto m = BuiltInMeasuredRecoveryTimes();
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_GE(m->detect_seconds, 10.0);
  EXPECT_GT(m->restart_seconds, 0.0);
  EXPECT_NE(m->source.find("emulated nodes"), std::string::npos) << m->source;
}

// A sleep run at scale gives detection; a PyTorch run, when there is one, gives the restart
// (to training resumed) and the cold starts, by the differences between the policies.
TEST(MeasuredRecoveryTimesTest, MergingRunsDerivesThePreset) {
  auto run = [](const char* program, int workers, double detect_ms, double requeue_ms,
                double replace_ms, double spares_ms, const char* key) {
    nlohmann::json r{{"program", program}, {"workers", workers}, {"conditions", program}};
    for (auto [policy, ms] : {std::pair{"requeue", requeue_ms}, std::pair{"replace", replace_ms},
                              std::pair{"spares", spares_ms}}) {
      r["policies"].push_back({{"policy", policy}, {"detectMsMean", detect_ms}, {key, ms}});
    }
    return r;
  };
  auto sleep = MergeMeasuredRecoveryRun(
      nullptr, run("sleep", 16, 11000, 300, 150, 100, "afterDetectMsMean"));
  auto m = ParseMeasuredRecoveryTimes(sleep.dump(), "t.json");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_DOUBLE_EQ(m->detect_seconds, 11.0);
  EXPECT_DOUBLE_EQ(m->restart_seconds, 0.1);
  EXPECT_DOUBLE_EQ(m->cold_start_seconds, 0.05);
  EXPECT_DOUBLE_EQ(m->cold_start_per_node_seconds, 0.01);
  // The PyTorch run's resumed times win for restart; detection stays the sleep run's.
  auto both = MergeMeasuredRecoveryRun(
      sleep, run("pytorch", 2, 12000, 9000, 8000, 8500, "afterDetectResumedMsMean"));
  m = ParseMeasuredRecoveryTimes(both.dump(), "t.json");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_DOUBLE_EQ(m->detect_seconds, 11.0);
  EXPECT_DOUBLE_EQ(m->restart_seconds, 8.5);
  EXPECT_DOUBLE_EQ(m->cold_start_seconds, 0.0);  // replace was quicker than spares: not negative
  EXPECT_DOUBLE_EQ(m->cold_start_per_node_seconds, 1.0);
  EXPECT_TRUE(both.contains("sleep") && both.contains("pytorch"));
}

TEST(MeasuredRecoveryTimesTest, BadFilesAreRefusedNamingTheField) {
  auto m = ParseMeasuredRecoveryTimes(R"({"preset": {"detect_seconds": -1}})", "t.json");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().message, "t.json: preset.detect_seconds: must be 0..86400 seconds");
  m = ParseMeasuredRecoveryTimes(R"({"sleep": {}})", "t.json");
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("t.json: preset: missing"), std::string::npos);
  m = LoadMeasuredRecoveryTimes("/nonexistent/recovery.json");
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("--recovery-times: must be measured or a file"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera
