// The llm-10k workload generator (determinism, the calibrated mix, topology constraints, the
// CSV round trip through the generic reader), and smoke runs of the scheduling benchmark and
// the topology experiment on small inputs.
#include "sim/workload_generator.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "sched/placement/task_placer.h"
#include "sim/cluster_spec.h"
#include "sim/schedule_benchmark.h"
#include "sim/topology_experiment.h"
#include "sim/trace/trace_reader.h"
#include "sim/workload_builder.h"

namespace tessera {
namespace {

std::vector<TraceJob> Generate(int jobs, double days, std::uint64_t seed) {
  WorkloadGenOptions o;
  o.jobs = jobs;
  o.days = days;
  o.seed = seed;
  auto r = GenerateWorkload(o);
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  return r ? *r : std::vector<TraceJob>{};
}

std::string Class(const TraceJob& j) { return j.id.substr(0, j.id.rfind('-')); }

TEST(WorkloadGeneratorTest, SameSeedSameTrace) {
  EXPECT_EQ(ToGenericCsv(Generate(2000, 3, 7)), ToGenericCsv(Generate(2000, 3, 7)));
  EXPECT_NE(ToGenericCsv(Generate(2000, 3, 7)), ToGenericCsv(Generate(2000, 3, 8)));
}

TEST(WorkloadGeneratorTest, OptionsOutOfRangeAreRefused) {
  WorkloadGenOptions o;
  o.jobs = 0;
  auto r = GenerateWorkload(o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("--jobs"), std::string::npos);
  o.jobs = 10;
  o.days = 0;
  r = GenerateWorkload(o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("--days"), std::string::npos);
  o.days = 1;
  o.preset = "llm-1m";
  r = GenerateWorkload(o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "--preset: 'llm-1m' is unknown (known: llm-10k)");
}

TEST(WorkloadGeneratorTest, MixMatchesThePreset) {
  const auto jobs = Generate(40'000, 14, 1);
  ASSERT_EQ(jobs.size(), 40'000U);
  const WorkloadMix mix = MeasureWorkloadMix(jobs, 10'000, 14);
  std::map<std::string, WorkloadMix::Class> by;
  for (const auto& c : mix.classes) by[c.name] = c;
  // Shares by count, within 1 point of the preset (binomial sd at n = 40,000 is < 0.25 pt).
  EXPECT_NEAR(by["pretrain"].job_share, 0.015, 0.01);
  EXPECT_NEAR(by["finetune"].job_share, 0.185, 0.01);
  EXPECT_NEAR(by["eval"].job_share, 0.60, 0.01);
  EXPECT_NEAR(by["infer"].job_share, 0.20, 0.01);
  // Acme's shape: pretraining is few jobs and most GPU time; evaluation the reverse.
  EXPECT_GT(by["pretrain"].gpu_time_share, 0.85);
  EXPECT_LT(by["eval"].gpu_time_share, 0.02);
  // Medians near the preset's (log-normal medians; clipping barely moves them).
  EXPECT_NEAR(by["eval"].median_hours, 0.2, 0.03);
  EXPECT_NEAR(by["finetune"].median_hours, 2.0, 0.25);
  EXPECT_NEAR(by["pretrain"].median_hours, 12.0, 3.0);

  std::set<std::string> teams, pretrain_teams;
  Tick last = 0;
  for (const auto& j : jobs) {
    EXPECT_GE(j.submit, last);
    last = j.submit;
    EXPECT_LT(j.submit, 14 * kDay);
    EXPECT_EQ(j.submit % kSecond, 0);
    EXPECT_GE(j.duration, kMinute);
    teams.insert(j.user);
    const std::string c = Class(j);
    if (c == "pretrain") {
      pretrain_teams.insert(j.user);
      EXPECT_GE(j.gpus, 256);
      EXPECT_LE(j.gpus, 4096);
      if (j.gpus <= 2048) {
        EXPECT_EQ(j.require, "spine");
        EXPECT_EQ(j.prefer, "leaf");
      } else {
        EXPECT_EQ(j.require, "");
        EXPECT_EQ(j.prefer, "spine");
      }
    } else if (c == "finetune") {
      EXPECT_GE(j.gpus, 8);
      EXPECT_LE(j.gpus, 64);
      EXPECT_EQ(j.require, "");
      EXPECT_EQ(j.prefer, j.gpus > 8 ? "leaf" : "");
    } else {
      EXPECT_GE(j.gpus, 1);
      EXPECT_LE(j.gpus, 8);
      EXPECT_EQ(j.require, "");
      EXPECT_EQ(j.prefer, "");
    }
  }
  EXPECT_EQ(teams.size(), 20U);
  EXPECT_EQ(pretrain_teams, (std::set<std::string>{"team-00", "team-01", "team-02", "team-03"}));
}

TEST(WorkloadGeneratorTest, CsvRoundTripsThroughTheGenericReaderAndFitsLlm10k) {
  const auto jobs = Generate(3000, 2, 3);
  const auto path = std::filesystem::temp_directory_path() / "tessera_gen_test.csv";
  std::ofstream(path) << ToGenericCsv(jobs);
  auto trace = ReadTrace(path.string());
  std::filesystem::remove(path);
  ASSERT_TRUE(trace) << trace.error().message;
  EXPECT_EQ(trace->format, "csv");
  ASSERT_EQ(trace->jobs.size(), jobs.size());
  auto cluster = LoadCluster("examples/config/clusters/llm-10k.yaml");
  ASSERT_TRUE(cluster) << cluster.error().message;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const auto& a = jobs[i];
    const auto& b = trace->jobs[i];
    EXPECT_EQ(a.id, b.id);
    EXPECT_EQ(a.submit, b.submit);
    EXPECT_EQ(a.duration, b.duration);
    EXPECT_EQ(a.gpus, b.gpus);
    EXPECT_EQ(a.user, b.user);
    EXPECT_EQ(a.require, b.require);
    EXPECT_EQ(a.prefer, b.prefer);
    const Workload w = ToWorkload(b, *cluster, JobId(static_cast<std::uint32_t>(i)));
    EXPECT_EQ(w.topology.require, a.require);
    EXPECT_FALSE(NeverFitsReason(*cluster, w)) << a.id;
  }
}

TEST(ScheduleBenchTest, SmallClusterSmoke) {
  ScheduleBenchOptions o;
  o.nodes = 64;
  o.nodes_per_leaf = 8;
  o.leaves_per_spine = 4;
  o.pending = 1000;
  o.gang_gpus = 128;
  o.repeats = 1;
  auto r = RunScheduleBench(o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->placements, 512);  // 64 × 8 single-GPU jobs fill the cluster
  EXPECT_TRUE(r->baseline_same_decisions);
  EXPECT_GT(r->placements_per_second, 0);
  // 128 GPUs = 16 nodes: two leaves of one spine at least.
  EXPECT_EQ(r->gang_level, "spine");
  EXPECT_EQ(r->gang_span, "spine");
  EXPECT_GE(r->gang_leaves, 2);
  const auto j = ScheduleBenchJson(o, *r);
  EXPECT_TRUE(j.contains("placements_per_second"));
  EXPECT_TRUE(j.contains("machine"));
  EXPECT_FALSE(j.contains("gang_1024_ms"));  // a 128-GPU gang here
  o.gang_gpus = 100;
  EXPECT_FALSE(RunScheduleBench(o));  // not whole nodes
}

TEST(TopologyExperimentTest, TopologyKeepsGangsWithinTheirLevels) {
  auto cluster = LoadCluster("examples/config/clusters/llm-10k.yaml");
  ASSERT_TRUE(cluster) << cluster.error().message;
  const auto trace = Generate(800, 1, 5);
  std::vector<Workload> jobs;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    jobs.push_back(ToWorkload(trace[i], *cluster, JobId(static_cast<std::uint32_t>(i))));
  }
  auto rows = RunTopologyExperiment(*cluster, jobs, {});
  ASSERT_TRUE(rows) << rows.error().message;
  ASSERT_EQ(rows->size(), 2U);
  const auto& topo = (*rows)[0];
  const auto& greedy = (*rows)[1];
  EXPECT_EQ(topo.gang_placement, "topology");
  const auto& all_t = topo.classes.back();
  const auto& all_g = greedy.classes.back();
  EXPECT_EQ(all_t.name, "all");
  EXPECT_EQ(all_t.jobs, 800);
  EXPECT_DOUBLE_EQ(all_t.within_required, 1.0);  // require is a hard constraint
  EXPECT_GT(all_t.within_preferred, all_g.within_preferred);
  EXPECT_LE(all_t.mean_slowdown, all_g.mean_slowdown);
  EXPECT_LE(all_t.mean_inner_domains, all_g.mean_inner_domains);
}

}  // namespace
}  // namespace tessera
