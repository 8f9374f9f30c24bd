// The failure model: the Llama 3 preset's arithmetic, seeded generation, lemons, and the YAML
// model and CSV failure-file readers, whose every error names the file, the line and the field.
#include "sim/failures/failure_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "sim/failures/failure_file.h"

namespace tessera {
namespace {

Cluster Nodes(int n, int gpus = 8) {
  Cluster c;
  for (int i = 0; i < n; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "node-%04d", i);
    EXPECT_TRUE(c.AddNode(name, "H100", gpus, 64000, 1 << 20));
  }
  return c;
}

void ExpectError(const Error& e, std::initializer_list<std::string_view> parts) {
  for (auto part : parts) {
    EXPECT_NE(e.message.find(part), std::string::npos) << "'" << part << "' not in: " << e.message;
  }
}

TEST(FailureModelTest, Llama3PresetGivesBack419InterruptionsIn54Days) {
  // The preset divides Table 5's counts by the exposure; multiplied back for the same job
  // (2,048 nodes × 8 GPUs under 64 leaves) over 1,296 hours it gives 419 interruptions:
  // 268 GPU + 46 host + 35 NIC/link + 7 leaf switch + 63 software.
  auto m = FailurePreset("llama3");
  ASSERT_TRUE(m);
  EXPECT_NEAR(m->JobFailuresPerHour(2048, 8, 64) * 54 * 24, 419, 1e-9);
  EXPECT_NEAR((*m)[Component::kGpu].rate_per_hour * 16384 * 1296, 268, 1e-9);
  EXPECT_NEAR((*m)[Component::kLeafSwitch].rate_per_hour * 64 * 1296, 7, 1e-9);
  // Job MTBF: 1,296 h / 419 = 3.09 h.
  EXPECT_NEAR(1 / m->JobFailuresPerHour(2048, 8, 64), 3.093, 1e-3);
  EXPECT_FALSE(FailurePreset("llama4"));
  EXPECT_EQ(FailurePreset("none")->JobFailuresPerHour(2048, 8, 64), 0);
}

TEST(FailureModelTest, ComponentNames) {
  for (Component c : kAllComponents) EXPECT_EQ(ParseComponent(ComponentName(c)), c);
  EXPECT_EQ(ParseComponent("link"), Component::kNic);
  EXPECT_EQ(ParseComponent("switch"), Component::kLeafSwitch);
  EXPECT_EQ(ParseComponent("cpu"), std::nullopt);
  EXPECT_EQ(UnitOf(Component::kLeafSwitch), FailureUnit::kLeaf);
}

TEST(GenerateFailuresTest, SameSeedSameScheduleAndTheRateComesOut) {
  // The Llama 3 cluster itself (2,048 nodes, leaves of 32) for 54 days: 419 failures expected;
  // a Poisson count has sd sqrt(419) ≈ 20.5, so ±5 sd is [317, 521].
  Cluster c = Nodes(2048);
  RecoveryTopology t = BuildRecoveryTopology(c);
  auto m = FailurePreset("llama3");
  const FailureSchedule a = GenerateFailures(*m, c, t, 54 * kDay, 7);
  const FailureSchedule b = GenerateFailures(*m, c, t, 54 * kDay, 7);
  const FailureSchedule other = GenerateFailures(*m, c, t, 54 * kDay, 8);
  EXPECT_GT(a.events.size(), 317U);
  EXPECT_LT(a.events.size(), 521U);
  ASSERT_EQ(a.events.size(), b.events.size());
  for (std::size_t i = 0; i < a.events.size(); ++i) {
    EXPECT_EQ(a.events[i].time, b.events[i].time);
    EXPECT_EQ(a.events[i].target, b.events[i].target);
    EXPECT_EQ(a.events[i].repair, b.events[i].repair);
  }
  EXPECT_NE(a.events.front().time, other.events.front().time);
  EXPECT_TRUE(std::is_sorted(a.events.begin(), a.events.end(),
                             [](const auto& x, const auto& y) { return x.time < y.time; }));
  for (const auto& e : a.events) {
    EXPECT_LT(e.time, 54 * kDay);
    if (e.component == Component::kLeafSwitch) {
      EXPECT_LT(e.target, 64U);
    }
    if (e.component == Component::kGpu) {
      EXPECT_LT(e.gpu, 8);
    }
    if (e.component == Component::kSoftware) {
      EXPECT_EQ(e.repair, 0);
    }
  }
}

TEST(GenerateFailuresTest, LemonsTakeTheirShareWithoutChangingTheTotal) {
  // llama3-lemons: 0.5 % of 2,000 nodes = 10 lemons at 50× → 0.005·49 / (1 + 0.005·49)
  // = 19.7 % of hardware (GPU, host, NIC) failures come from their excess rate. Over a year the
  // hardware count is ~2000/2048 × 349 × 365/54 ≈ 2,300, so the share is known to ~±2 %.
  Cluster c = Nodes(2000);
  RecoveryTopology t = BuildRecoveryTopology(c);
  auto m = FailurePreset("llama3-lemons");
  const FailureSchedule s = GenerateFailures(*m, c, t, 365 * kDay, 1);
  EXPECT_EQ(s.lemons.size(), 10U);
  double hardware = 0, excess = 0;
  for (const auto& e : s.events) {
    if (e.component == Component::kGpu || e.component == Component::kHost ||
        e.component == Component::kNic) {
      ++hardware;
      excess += e.lemon;
      if (e.lemon) {
        EXPECT_TRUE(std::binary_search(s.lemons.begin(), s.lemons.end(), NodeId(e.target)));
      }
    }
  }
  EXPECT_NEAR(hardware, 2000.0 / 2048 * 349 * 365 / 54, 5 * std::sqrt(2300.0));
  EXPECT_NEAR(excess / hardware, 0.197, 0.03);
}

TEST(FailureModelYamlTest, StartsFromAPresetAndOverrides) {
  auto m = ParseFailureModelYaml(R"(
name: harsh
base: llama3
repair: fixed
lemons: {fraction: 0.01, multiplier: 5}
components:
  gpu: {rate_per_hour: 2e-5}
  leaf_switch: {repair_hours: 1.5}
)",
                                 "harsh.yaml");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->name, "harsh");
  EXPECT_TRUE(m->fixed_repair);
  EXPECT_DOUBLE_EQ(m->lemon_fraction, 0.01);
  EXPECT_DOUBLE_EQ((*m)[Component::kGpu].rate_per_hour, 2e-5);
  EXPECT_DOUBLE_EQ((*m)[Component::kGpu].repair_hours, 48);  // from the preset
  EXPECT_DOUBLE_EQ((*m)[Component::kLeafSwitch].repair_hours, 1.5);
  EXPECT_DOUBLE_EQ((*m)[Component::kHost].rate_per_hour,
                   (*FailurePreset("llama3"))[Component::kHost].rate_per_hour);
}

TEST(FailureModelYamlTest, ErrorsNameFileLineAndField) {
  struct Case {
    const char* yaml;
    std::initializer_list<std::string_view> expect;
  };
  const Case cases[] = {
      {"components:\n  gpu: {rate_per_hour: 1e-5}\n  cpu: {rate_per_hour: 1e-5}\n",
       {"m.yaml:3:", "components.cpu", "unknown component", "leaf_switch"}},
      {"components:\n  gpu:\n    rate_per_hour: -1\n",
       {"m.yaml:3:", "components.gpu.rate_per_hour", "must not be negative"}},
      {"components:\n  host: {repair_hours: soon}\n",
       {"m.yaml:2:", "components.host.repair_hours", "expected a number"}},
      {"components:\n  nic: {rate: 1}\n", {"m.yaml:2:", "components.nic.rate", "unknown field"}},
      {"lemons: {fraction: 2}\n", {"m.yaml:1:", "lemons.fraction", "between 0 and 1"}},
      {"base: llama9\n", {"m.yaml:1:", "base", "not a preset"}},
      {"repair: sometimes\n", {"m.yaml:1:", "repair", "exponential or fixed"}},
      {"rates: {}\n", {"m.yaml:1:", "rates", "unknown field"}},
      {"components: [gpu]\n", {"m.yaml:1:", "components", "expected a mapping"}},
      {"components:\n  gpu: {rate_per_hour: 1\n", {"m.yaml:", "(yaml)"}},
  };
  for (const auto& c : cases) {
    auto m = ParseFailureModelYaml(c.yaml, "m.yaml");
    ASSERT_FALSE(m) << c.yaml;
    ExpectError(m.error(), c.expect);
  }
}

TEST(FailureModelYamlTest, LoadsFromAFileAndNamesIt) {
  const std::string path = ::testing::TempDir() + "/failure_model_test.yaml";
  std::ofstream(path) << "base: llama3\ncomponents:\n  software: {rate_per_hour: -0.5}\n";
  auto m = LoadFailureModelYaml(path);
  ASSERT_FALSE(m);
  ExpectError(m.error(), {path + ":3:", "components.software.rate_per_hour"});
  EXPECT_FALSE(LoadFailureModelYaml(path + ".missing"));
}

class FailureFileTest : public ::testing::Test {
 protected:
  Cluster cluster_ = Nodes(64);
  RecoveryTopology topology_ = BuildRecoveryTopology(cluster_);  // leaf-0, leaf-1
  Result<std::vector<FailureEvent>> Parse(std::string_view text, Tick horizon = kDay) {
    return ParseFailureCsv(text, "f.csv", cluster_, topology_, horizon);
  }
};

TEST_F(FailureFileTest, ReadsNamesIndicesAndRepairs) {
  auto e = Parse(
      "# an incident\n"
      "time_seconds,component,target,repair_seconds\n"
      "7200.5,leaf_switch,leaf-1,1800\n"
      "\n"
      "3600,gpu,node-0042,\n"
      "60,software,5,\n");
  ASSERT_TRUE(e) << e.error().message;
  ASSERT_EQ(e->size(), 3U);
  EXPECT_EQ((*e)[0].time, 60 * kSecond);  // sorted by time
  EXPECT_EQ((*e)[0].component, Component::kSoftware);
  EXPECT_EQ((*e)[0].target, 5U);
  EXPECT_EQ((*e)[1].target, 42U);
  EXPECT_EQ((*e)[1].repair, -1);  // the model's mean
  EXPECT_EQ((*e)[1].line, 5);
  EXPECT_EQ((*e)[2].time, 7200500);
  EXPECT_EQ((*e)[2].component, Component::kLeafSwitch);
  EXPECT_EQ((*e)[2].target, 1U);
  EXPECT_EQ((*e)[2].repair, 1800 * kSecond);
}

TEST_F(FailureFileTest, ColumnsMayComeInAnyOrderAndRepairIsOptional) {
  auto e = Parse("target,time_seconds,component\nnode-0001,10,host\n");
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ((*e)[0].component, Component::kHost);
  EXPECT_EQ((*e)[0].target, 1U);
}

TEST_F(FailureFileTest, ErrorsNameFileLineAndField) {
  struct Case {
    const char* csv;
    std::initializer_list<std::string_view> expect;
  };
  const Case cases[] = {
      {"time_seconds,component,target\n10,gpu,node-0001\n20,cpu,node-0002\n",
       {"f.csv:3:", "field 'component'", "unknown component 'cpu'", "leaf_switch"}},
      {"time_seconds,component,target\n-5,gpu,node-0001\n",
       {"f.csv:2:", "field 'time_seconds'", "outside the run [0, 86400)"}},
      {"time_seconds,component,target\n86400,gpu,node-0001\n",
       {"f.csv:2:", "field 'time_seconds'", "outside the run"}},
      {"time_seconds,component,target\nsoon,gpu,node-0001\n",
       {"f.csv:2:", "field 'time_seconds'", "expected a number"}},
      {"time_seconds,component,target\n10,gpu,node-9999\n",
       {"f.csv:2:", "field 'target'", "no node named 'node-9999'"}},
      {"time_seconds,component,target\n10,leaf_switch,leaf-7\n",
       {"f.csv:2:", "field 'target'", "no leaf named 'leaf-7'"}},
      {"time_seconds,component,target,repair_seconds\n10,gpu,node-0001,-3\n",
       {"f.csv:2:", "field 'repair_seconds'"}},
      {"time_seconds,component\n10,gpu\n", {"f.csv:1:", "field 'target'", "missing column"}},
      {"time,component,target\n", {"f.csv:1:", "field 'time'", "unknown column"}},
      {"time_seconds,component,target\n10,gpu,node-0001,x\n", {"f.csv:2:", "4 fields"}},
      {"time_seconds,component,target\n10,\"gpu\",node-0001\n", {"f.csv:2:", "quotes"}},
      {"", {"f.csv:1:", "empty file"}},
  };
  for (const auto& c : cases) {
    auto e = Parse(c.csv);
    ASSERT_FALSE(e) << c.csv;
    ExpectError(e.error(), c.expect);
  }
}

TEST_F(FailureFileTest, WrittenSchedulesReadBackTheSame) {
  auto m = FailurePreset("llama3");
  const FailureSchedule s = GenerateFailures(*m, cluster_, topology_, 365 * kDay, 3);
  ASSERT_FALSE(s.events.empty());
  auto back = ParseFailureCsv(FailureCsv(s.events, cluster_, topology_), "back.csv", cluster_,
                              topology_, 365 * kDay);
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->size(), s.events.size());
  for (std::size_t i = 0; i < s.events.size(); ++i) {
    EXPECT_EQ((*back)[i].time, s.events[i].time);
    EXPECT_EQ((*back)[i].component, s.events[i].component);
    EXPECT_EQ((*back)[i].target, s.events[i].target);
    EXPECT_EQ((*back)[i].repair, s.events[i].repair);
  }
}

}  // namespace
}  // namespace tessera
