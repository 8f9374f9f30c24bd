// The co-location experiment: its load curve and load-trace reader with their arithmetic, the
// YAML config's errors, and on a small cluster that co-location keeps the SLO of a cluster that
// never evicts while allocating more than dedicated pools, never preempts an online replica,
// oversells only when asked, and is deterministic.
#include "sim/colocation_experiment.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sim/colocation_plan.h"
#include "spec/colocation_file.h"

namespace tessera {
namespace {

std::string TempFile(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("tessera-colocation-" + name);
  std::ofstream(path) << text;
  return path.string();
}

TEST(DiurnalLoadTest, PeakTroughAndMidway) {
  EXPECT_DOUBLE_EQ(DiurnalLoad(14, 0.35, 14), 1.0);
  EXPECT_NEAR(DiurnalLoad(2, 0.35, 14), 0.35, 1e-12);             // 12 h from the peak
  EXPECT_NEAR(DiurnalLoad(8, 0.35, 14), 0.35 + 0.65 / 2, 1e-12);  // 6 h: halfway
  EXPECT_NEAR(DiurnalLoad(38, 0.35, 14), 1.0, 1e-12);             // a day later
}

TEST(MinuteLoadTest, RequestsPerMinuteOverTheirMeanWithoutTheCutEdgeMinutes) {
  // Five minutes; the first and last, cut by the trace's start and end, are dropped; 1, 2 and
  // 3 requests in the three whole ones: mean 2, factors 0.5, 1, 1.5.
  const auto path = TempFile("azure.csv",
                             "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                             "2023-11-16 18:14:59.68,374,44\n"
                             "2023-11-16 18:15:46.68,374,44\n"
                             "2023-11-16 18:16:01.00,10,1\n"
                             "2023-11-16 18:16:59.00,10,1\n"
                             "2023-11-16 18:17:00.00,10,1\n"
                             "2023-11-16 18:17:10.00,10,1\n"
                             "2023-11-16 18:17:20.00,10,1\n"
                             "2023-11-16 18:18:01.00,10,1\n");
  auto f = ReadMinuteLoadFactors(path);
  ASSERT_TRUE(f) << f.error().message;
  ASSERT_EQ(f->size(), 3u);
  EXPECT_DOUBLE_EQ((*f)[0], 0.5);
  EXPECT_DOUBLE_EQ((*f)[1], 1.0);
  EXPECT_DOUBLE_EQ((*f)[2], 1.5);
  // Two minutes: nothing whole between them, both kept.
  auto two = ReadMinuteLoadFactors(TempFile("azure2.csv",
                                            "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                            "2023-11-16 18:15:46.68,374,44\n"
                                            "2023-11-16 18:16:01.00,10,1\n"
                                            "2023-11-16 18:16:02.00,10,1\n"));
  ASSERT_TRUE(two) << two.error().message;
  EXPECT_EQ(two->size(), 2u);
  const auto bad = TempFile("bad.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,1,1\n");
  auto e = ReadMinuteLoadFactors(bad);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("bad.csv:2: column 'TIMESTAMP'"), std::string::npos)
      << e.error().message;
}

TEST(ColocationConfigFileTest, ReadsEveryKey) {
  auto c = ParseColocationConfigYaml(
      "colocation:\n  oversell: 0.25\n  online: [InferenceService, DevSession]\n"
      "  offline: [BatchJob]\n  evictionCostSeconds: 12.5\n",
      "co.yaml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_TRUE(c->enabled);
  EXPECT_EQ(c->oversell_permille, 250);
  EXPECT_EQ(c->online,
            (std::vector<WorkloadKind>{WorkloadKind::kInference, WorkloadKind::kDevSession}));
  EXPECT_EQ(c->eviction_cost, 12'500);
}

TEST(ColocationConfigFileTest, ErrorsNameFileLineKeyAndReason) {
  auto expect_error = [](const std::string& yaml, const std::string& want) {
    auto c = ParseColocationConfigYaml(yaml, "co.yaml");
    ASSERT_FALSE(c) << yaml;
    EXPECT_NE(c.error().message.find(want), std::string::npos) << c.error().message;
  };
  expect_error("colocation:\n  oversell: 1.5\n",
               "co.yaml:2: colocation.oversell: must be a number between 0 and 1");
  expect_error("colocation:\n  oversell: lots\n", "colocation.oversell: must be a number");
  expect_error("colocation:\n  overbook: 0.5\n", "co.yaml:2: colocation.overbook: unknown key");
  expect_error("colocation:\n  offline: [BatchJobs]\n",
               "colocation.offline: 'BatchJobs' is not a kind");
  expect_error("colocation:\n  online: [InferenceService]\n  offline: [InferenceService]\n",
               "co.yaml:3: colocation.offline: InferenceService is also online");
  expect_error("colocation:\n  evictionCostSeconds: -3\n",
               "colocation.evictionCostSeconds: must be");
  expect_error("oversell: 0.5\n", "colocation: missing");
  expect_error("colocation: [1, 2]\n", "colocation: expected a mapping");
}

Cluster SmallCluster() {
  Cluster c;
  for (int i = 0; i < 8; ++i)
    EXPECT_TRUE(c.AddNode("n" + std::to_string(i), "H100", 4, 64000, 1 << 19));
  return c;  // 32 GPUs
}

ColocationOptions SmallOptions() {
  ColocationOptions o;
  o.workload = "fleet";
  o.horizon = 12 * 60 * kMinute;
  o.online_share = 0.5;
  o.offline_load = 1.0;
  ColocationSetup s;
  s.name = "dedicated";
  s.mode = ColocationSetup::Mode::kDedicated;
  o.setups.push_back(s);
  s.name = "shared";
  s.mode = ColocationSetup::Mode::kShared;
  o.setups.push_back(s);
  s.name = "colocate-0";
  s.mode = ColocationSetup::Mode::kColocate;
  o.setups.push_back(s);
  s.name = "colocate-1";
  s.colocation.oversell_permille = 1000;
  o.setups.push_back(s);
  return o;
}

TEST(ColocationExperimentTest, ColocationAllocatesMoreAndKeepsTheSlo) {
  const Cluster c = SmallCluster();
  auto r = RunColocationExperiment(c, {}, SmallOptions());
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->runs.size(), 4u);
  const auto& dedicated = r->runs[0];
  const auto& shared = r->runs[1];
  const auto& colocate = r->runs[2];
  const auto& oversell = r->runs[3];
  EXPECT_GT(r->offline_tasks, 100);
  // Dedicated pools never evict and leave the online pool's trough idle.
  EXPECT_EQ(dedicated.evictions, 0);
  EXPECT_EQ(shared.evictions, 0);
  EXPECT_GT(colocate.allocation_ratio, dedicated.allocation_ratio);
  // Evicting offline work gets replicas started that a cluster without eviction keeps waiting.
  EXPECT_GT(colocate.evictions_for_online, 0);
  EXPECT_GE(colocate.slo_attainment, shared.slo_attainment);
  EXPECT_GT(colocate.slo_attainment, 0.9);
  // Oversell places offline shares on the replicas' unused GPU; without it, none.
  EXPECT_EQ(colocate.oversold_ratio, 0);
  EXPECT_EQ(colocate.evictions_for_credit, 0);
  EXPECT_GT(oversell.oversold_ratio, 0);
  EXPECT_GE(oversell.allocation_ratio, colocate.allocation_ratio);
  for (const auto& run : r->runs) {
    EXPECT_LE(run.allocation_ratio, 1.0 + run.oversold_ratio + 1e-9) << run.name;
    EXPECT_GE(run.slo_attainment, 0.0);
    EXPECT_LE(run.slo_attainment, 1.0);
    EXPECT_LE(run.offline_tasks_done, run.offline_tasks_submitted);
    // Autoscaled replicas: fewer replica-seconds than every service at its peak all the time
    // (12 h of a daily cycle with a trough of 0.35), and more than none.
    EXPECT_GT(run.online_replica_seconds, 0) << run.name;
    EXPECT_LT(run.online_replica_seconds, run.static_peak_replica_seconds) << run.name;
  }
  EXPECT_EQ(dedicated.static_peak_replica_seconds, oversell.static_peak_replica_seconds);
}

TEST(ColocationExperimentTest, SameSeedSameResult) {
  const Cluster c = SmallCluster();
  ColocationOptions o = SmallOptions();
  o.horizon = 3 * 60 * kMinute;
  auto a = RunColocationExperiment(c, {}, o);
  auto b = RunColocationExperiment(c, {}, o);
  ASSERT_TRUE(a && b);
  for (std::size_t i = 0; i < a->runs.size(); ++i) {
    EXPECT_EQ(a->runs[i].slo_attainment, b->runs[i].slo_attainment);
    EXPECT_EQ(a->runs[i].allocation_ratio, b->runs[i].allocation_ratio);
    EXPECT_EQ(a->runs[i].evictions, b->runs[i].evictions);
    EXPECT_EQ(a->runs[i].offline_tasks_done, b->runs[i].offline_tasks_done);
  }
}

// The plan file carries the drawn workload exactly: a run on the plan read back gives the
// drawn run's results bit for bit (what lets the live bench and the simulator share one draw).
TEST(ColocationPlanTest, PlanReadBackRunsLikeTheDraw) {
  const Cluster c = SmallCluster();
  ColocationOptions o = SmallOptions();
  o.horizon = 3 * 60 * kMinute;
  o.burst = {0.5, 1.5, 1.0};
  o.autoscale_policy = AutoscalePolicy::kKpa;  // carried by the plan too
  auto drawn = DrawColocationWorkload(c, {}, o);
  ASSERT_TRUE(drawn) << drawn.error().message;
  ASSERT_EQ(drawn->loads.size(), drawn->services.size());
  EXPECT_EQ(drawn->loads[0].size(), 240u);  // 1 h warm-up + 3 h, minutes
  const auto path = TempFile("plan.json", ColocationPlanJson(*drawn, o).dump());
  ColocationOptions read_options = SmallOptions();  // timing from the plan, not from here
  auto read = ReadColocationPlan(path, read_options);
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(read_options.horizon, o.horizon);
  EXPECT_EQ(read_options.autoscale_policy, AutoscalePolicy::kKpa);
  EXPECT_EQ(read->offline.size(), drawn->offline.size());
  auto a = RunColocationWorkload(c, *drawn, o);
  auto b = RunColocationWorkload(c, *read, read_options);
  auto direct = RunColocationExperiment(c, {}, o);
  ASSERT_TRUE(a && b && direct);
  for (std::size_t i = 0; i < a->runs.size(); ++i) {
    EXPECT_EQ(a->runs[i].allocation_ratio, b->runs[i].allocation_ratio) << a->runs[i].name;
    EXPECT_EQ(a->runs[i].slo_attainment, b->runs[i].slo_attainment) << a->runs[i].name;
    EXPECT_EQ(a->runs[i].online_replica_seconds, b->runs[i].online_replica_seconds);
    EXPECT_EQ(a->runs[i].evictions, b->runs[i].evictions) << a->runs[i].name;
    EXPECT_EQ(a->runs[i].allocation_ratio, direct->runs[i].allocation_ratio);
  }
  // Bad plans name the file, the field and the reason.
  auto plan = ColocationPlanJson(*drawn, o);
  plan["offline"][2]["gpus"] = 0;
  auto bad = ReadColocationPlan(TempFile("bad-plan.json", plan.dump()), read_options);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("bad-plan.json: offline[2].gpus: must be within [1, 16]"),
            std::string::npos)
      << bad.error().message;
  plan = ColocationPlanJson(*drawn, o);
  plan["services"][0]["load"].erase(5);
  bad = ReadColocationPlan(TempFile("short-plan.json", plan.dump()), read_options);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("services[0].load: must list one load"), std::string::npos)
      << bad.error().message;
  plan = ColocationPlanJson(*drawn, o);
  plan["autoscalePolicy"] = "vpa";
  bad = ReadColocationPlan(TempFile("policy-plan.json", plan.dump()), read_options);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("autoscalePolicy: must be hpa or kpa"), std::string::npos)
      << bad.error().message;
}

// The autoscaler acts a step after the load it measured: with one-minute steps every rise of
// the minute's load is served a minute late whatever the policy; at 10 s steps, 10 s late.
// Knative's KPA, with no scale-down window, holds fewer replicas than HPA's 5 minutes.
TEST(ColocationExperimentTest, KpaAtTenSecondStepsServesRisesSoonerAndHoldsLessThanHpa) {
  const Cluster c = SmallCluster();
  ColocationOptions o = SmallOptions();
  o.horizon = 3 * 60 * kMinute;
  o.burst = {0.5, 1.5, 1.0, 0.7};
  o.setups.erase(o.setups.begin(), o.setups.begin() + 2);  // colocate-0
  o.setups.resize(1);
  auto hpa = RunColocationExperiment(c, {}, o);
  o.autoscale_policy = AutoscalePolicy::kKpa;
  o.scale_down_window = 0;
  auto kpa_minute = RunColocationExperiment(c, {}, o);
  o.step = 10 * kSecond;
  auto kpa_10s = RunColocationExperiment(c, {}, o);
  ASSERT_TRUE(hpa && kpa_minute && kpa_10s);
  const ColocationRun& h = hpa->runs[0];
  const ColocationRun& k60 = kpa_minute->runs[0];
  const ColocationRun& k10 = kpa_10s->runs[0];
  EXPECT_GT(k10.slo_attainment, k60.slo_attainment);
  EXPECT_LT(k60.online_replica_seconds, h.online_replica_seconds);
  EXPECT_LT(k10.online_replica_seconds, h.online_replica_seconds);
  EXPECT_DOUBLE_EQ(k10.static_peak_replica_seconds, h.static_peak_replica_seconds);
}

// --dedicated-online-models: the named models' nodes are the online pool, so a bench can give
// the dedicated setup's pools GPU models of their own.
TEST(ColocationExperimentTest, DedicatedPoolsByGpuModel) {
  Cluster c;
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(c.AddNode("on" + std::to_string(i), "H100", 1, 8000, 1 << 16));
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(c.AddNode("off" + std::to_string(i), "A100", 1, 8000, 1 << 16));
  ColocationOptions o = SmallOptions();
  o.horizon = 2 * 60 * kMinute;
  o.setups.resize(1);  // dedicated
  o.dedicated_online_models = {"H100"};
  auto r = RunColocationExperiment(c, {}, o);
  ASSERT_TRUE(r) << r.error().message;
  // The online pool is 5 of the 8 GPUs; offline work fills the other 3 and never more.
  EXPECT_LE(r->runs[0].offline_allocation_ratio, 3.0 / 8 + 1e-9);
  EXPECT_GT(r->runs[0].offline_allocation_ratio, 0.25);
  EXPECT_LE(r->runs[0].online_allocation_ratio, 5.0 / 8 + 1e-9);
}

TEST(ColocationExperimentTest, RefusesBadOptions) {
  const Cluster c = SmallCluster();
  ColocationOptions o = SmallOptions();
  o.workload = "openb";
  auto r = RunColocationExperiment(c, {}, o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("no LS pod"), std::string::npos);
  o = SmallOptions();
  o.online_share = 0;
  EXPECT_FALSE(RunColocationExperiment(c, {}, o));
  o = SmallOptions();
  o.setups[3].colocation.oversell_permille = 2000;
  r = RunColocationExperiment(c, {}, o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("colocate-1: oversell:"), std::string::npos);
}

TEST(ColocationExperimentTest, OpenbLsOnlineBeOffline) {
  const Cluster c = SmallCluster();
  std::vector<TraceJob> pods;
  for (int i = 0; i < 20; ++i) {
    TraceJob p;
    p.id = "pod-" + std::to_string(i);
    p.cpu_milli = 4000;
    p.memory_mib = 8192;
    p.gpus = 1;
    p.gpu_milli = i % 2 == 0 ? 1000 : 300;
    p.qos = i < 10 ? "LS" : "BE";
    p.duration = (5 + i) * kMinute;
    pods.push_back(p);
  }
  ColocationOptions o = SmallOptions();
  o.workload = "openb";
  o.horizon = 4 * 60 * kMinute;
  auto r = RunColocationExperiment(c, pods, o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_GE(r->online_peak_gpus, 16.0);
  EXPECT_GT(r->offline_tasks, 0);
  // BE run times are clamped to at least 10 minutes: (5..19 min) → mean ≥ 10 min of 0.3 or 1 GPU.
  EXPECT_GT(r->offline_mean_gpu_seconds, 0.3 * 600);
}

}  // namespace
}  // namespace tessera
