// ctest-labels: e2e
// `tessera sim --experiment serving` end to end on a 300-request slice of the Mooncake trace:
// a row per router, summary.json with the keys per router, a report with the curves over
// rate; bad flags are refused naming the flag.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace {

std::string Bin() {
  const char* dir = std::getenv("TESSERA_BIN_DIR");
  return std::string(dir != nullptr ? dir : "build") + "/tessera";
}

std::pair<int, std::string> RunCommand(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return {-1, ""};
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

const std::string kTrace = "../shared/traces/mooncake-2025/conversation_trace.jsonl";

TEST(ServingCliTest, RunsEveryRouterAndWritesTheSummary) {
  if (!std::filesystem::exists(kTrace)) GTEST_SKIP() << kTrace << " is not here";
  const auto dir = std::filesystem::temp_directory_path() / "tessera-serving-cli";
  std::filesystem::remove_all(dir);
  auto [rc, out] = RunCommand(Bin() + " sim --experiment serving --trace " + kTrace +
                              " --max-requests 300 --replicas 4 --kv-blocks-per-replica auto "
                              "--rate-sweep 2 --out " +
                              dir.string());
  ASSERT_EQ(rc, 0) << out;
  for (const char* router : {"round-robin", "least-request", "prefix", "weighted", "tessera"}) {
    EXPECT_NE(out.find(router), std::string::npos) << router << "\n" << out;
  }
  EXPECT_NE(out.find("simulated replicas"), std::string::npos) << out;
  std::ifstream in(dir / "summary.json");
  ASSERT_TRUE(in);
  const auto summary = nlohmann::json::parse(in);
  EXPECT_EQ(summary["experiment"], "serving");
  EXPECT_TRUE(summary["serving"]["engine"]["simulated"].get<bool>());
  EXPECT_TRUE(summary["serving"]["kv_blocks_per_replica_auto"].get<bool>());
  ASSERT_EQ(summary["results"].size(), 5u);
  for (const auto& r : summary["results"]) {
    for (const char* key : {"router", "prefix_hit_rate", "global_lru_hit_rate", "ttft_ms", "tbt_ms",
                            "slo_attainment", "goodput_rps", "rejected", "load_imbalance"}) {
      EXPECT_TRUE(r.contains(key)) << key;
    }
    EXPECT_EQ(r["requests"], 300);
    EXPECT_LE(r["prefix_hit_rate"].get<double>(), 1.0);
  }
  EXPECT_EQ(summary["rate_sweep"].size(), 5u);
  std::ifstream html(dir / "report.html");
  const std::string page((std::istreambuf_iterator<char>(html)), {});
  EXPECT_NE(page.find("chart-serving-goodput"), std::string::npos);
  EXPECT_NE(page.find("chart-serving-imbalance"), std::string::npos);
  for (const auto& pt : summary["rate_sweep"]) {
    EXPECT_GE(pt["load_imbalance"].get<double>(), pt["load_imbalance_floor"].get<double>() - 1e-9);
  }
}

TEST(ServingCliTest, BadFlagsNameTheFlag) {
  if (!std::filesystem::exists(kTrace)) GTEST_SKIP() << kTrace << " is not here";
  const std::string base =
      Bin() + " sim --experiment serving --trace " + kTrace + " --max-requests 10 --out " +
      (std::filesystem::temp_directory_path() / "tessera-serving-bad").string();
  auto [rc1, out1] = RunCommand(base + " --router tessera,random");
  EXPECT_EQ(rc1, 2);
  EXPECT_NE(out1.find("--router: 'random' is unknown"), std::string::npos) << out1;
  auto [rc2, out2] = RunCommand(base + " --kv-blocks-per-replica lots");
  EXPECT_EQ(rc2, 2);
  EXPECT_NE(out2.find("--kv-blocks-per-replica: 'lots' is neither auto nor"), std::string::npos)
      << out2;
  auto [rc3, out3] = RunCommand(base + " --engine /nonexistent.yaml");
  EXPECT_EQ(rc3, 2);
  EXPECT_NE(out3.find("--engine: "), std::string::npos) << out3;
  auto [rc4, out4] = RunCommand(base + " --routing-param hot_rel=x");
  EXPECT_EQ(rc4, 2);
  EXPECT_NE(out4.find("--routing-param: 'hot_rel=x' is not NAME=NUMBER"), std::string::npos)
      << out4;
  auto [rc5, out5] = RunCommand(base + " --routing-param warmth=1");
  EXPECT_EQ(rc5, 2);
  EXPECT_NE(out5.find("routing parameter 'warmth' is unknown"), std::string::npos) << out5;
}

// The live replay's simulated side alone (no cluster): a warm-up left out of the figures, and
// the same slice again under seeded arrival jitter.
TEST(ServingCliTest, BenchServingSimOnlyWithWarmupAndJitter) {
  if (!std::filesystem::exists(kTrace)) GTEST_SKIP() << kTrace << " is not here";
  const std::string base = Bin() + " bench serving --trace " + kTrace +
                           " --skip 3000 --replicas 4 --router tessera --sim-only";
  auto [rc, out] = RunCommand(base + " --warmup 100 --requests 200 --sim-jitter-runs 2");
  ASSERT_EQ(rc, 0) << out;
  const auto json = nlohmann::json::parse(out.substr(out.find("\n{") + 1), nullptr, false);
  ASSERT_TRUE(json.is_object()) << out;
  EXPECT_EQ(json["trace"]["warmup"], 100);
  EXPECT_EQ(json["trace"]["requests"], 200);
  EXPECT_EQ(json["sim"]["completed"].get<int>() + json["sim"]["rejected"].get<int>(), 200);
  EXPECT_GT(json["sim"]["prefix_hit_rate"].get<double>(), 0);
  ASSERT_EQ(json["sim_jitter"]["runs"].size(), 2u);
  EXPECT_EQ(json["sim_jitter"]["jitter_ms"], 5.0);
  EXPECT_FALSE(json.contains("live"));

  auto [rc2, out2] = RunCommand(Bin() + " bench serving --trace " + kTrace +
                                " --router tessera --sim-routing-param hot_abs=1");
  EXPECT_EQ(rc2, 1);
  EXPECT_NE(out2.find("--sim-routing-param: only with --sim-only"), std::string::npos) << out2;
  auto [rc3, out3] = RunCommand(base + " --warmup -1");
  EXPECT_EQ(rc3, 1);
  EXPECT_NE(out3.find("--warmup: must be >= 0"), std::string::npos) << out3;
}

}  // namespace
