// ctest-labels: e2e
// `tessera sim --experiment colocation` end to end: the binary runs the setups, prints a row per
// setup, writes summary.json with the documented keys and a report; a bad config is refused
// with the file, key and reason and nothing is written.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace {

std::string Bin() {
  const char* dir = std::getenv("TESSERA_BIN_DIR");
  return std::string(dir != nullptr ? dir : "build") + "/tessera";
}

// Runs `cmd`, returns (exit status, stdout+stderr).
std::pair<int, std::string> RunCommand(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return {-1, ""};
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST(ColocationCliTest, RunsTheSetupsAndWritesTheSummary) {
  const auto dir = std::filesystem::temp_directory_path() / "tessera-colocation-cli";
  std::filesystem::remove_all(dir);
  const auto config = dir.string() + ".yaml";
  std::ofstream(config) << "colocation:\n  oversell: 0.5\n  evictionCostSeconds: 10\n";
  auto [rc, out] = RunCommand(Bin() +
                              " sim --experiment colocation --workload fleet --cluster 6x4:H100 "
                              "--hours 3 --placement fgd --colocation " +
                              config + " --oversell 0,1 --out " + dir.string());
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("dedicated"), std::string::npos) << out;
  EXPECT_NE(out.find("colocate-oversell-1"), std::string::npos) << out;
  std::ifstream in(dir / "summary.json");
  ASSERT_TRUE(in);
  const auto summary = nlohmann::json::parse(in);
  EXPECT_EQ(summary["experiment"], "colocation");
  EXPECT_EQ(summary["colocation"]["workload"], "fleet");
  ASSERT_EQ(summary["results"].size(), 4u);  // dedicated, shared, oversell 0 and 1
  for (const auto& r : summary["results"]) {
    for (const char* key : {"slo_attainment", "gpu_allocation_ratio", "gpu_utilisation",
                            "offline_gpu_hours_done", "evictions", "oversold_ratio"}) {
      EXPECT_TRUE(r.contains(key)) << key;
    }
    EXPECT_FALSE(r["series"]["gpu_allocation_ratio"].empty());
  }
  EXPECT_EQ(summary["results"][2]["oversell"], 0.0);
  EXPECT_EQ(summary["results"][3]["oversell"], 1.0);
  EXPECT_TRUE(std::filesystem::exists(dir / "report.html"));
}

// --write-plan then --plan: the second run, on the plan file alone (no --hours, no load trace),
// gives the first one's results (bench/colocation_live.py replays the same file live).
TEST(ColocationCliTest, PlanWrittenThenRunGivesTheSameResults) {
  const auto dir = std::filesystem::temp_directory_path() / "tessera-colocation-cli-plan";
  std::filesystem::remove_all(dir);
  const std::string plan = dir.string() + "-plan.json";
  auto [rc, out] = RunCommand(Bin() +
                              " sim --experiment colocation --workload fleet --cluster 4x2:H100 "
                              "--hours 2 --setups dedicated,colocate --oversell 0.5 "
                              "--write-plan " +
                              plan + " --out " + (dir / "a").string());
  ASSERT_EQ(rc, 0) << out;
  std::ifstream pin(plan);
  ASSERT_TRUE(pin);
  const auto p = nlohmann::json::parse(pin);
  EXPECT_EQ(p["kind"], "colocation-plan");
  EXPECT_EQ(p["horizonSeconds"], 7200.0);
  EXPECT_FALSE(p["offline"].empty());
  auto [rc2, out2] = RunCommand(Bin() +
                                " sim --experiment colocation --cluster 4x2:H100 --setups "
                                "dedicated,colocate --oversell 0.5 --plan " +
                                plan + " --out " + (dir / "b").string());
  ASSERT_EQ(rc2, 0) << out2;
  const auto a = nlohmann::json::parse(std::ifstream(dir / "a" / "summary.json"));
  const auto b = nlohmann::json::parse(std::ifstream(dir / "b" / "summary.json"));
  ASSERT_EQ(a["results"].size(), 2u);
  ASSERT_EQ(b["results"].size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    for (const char* key : {"gpu_allocation_ratio", "slo_attainment", "online_replica_seconds",
                            "evictions", "offline_tasks_submitted"}) {
      EXPECT_EQ(a["results"][i][key], b["results"][i][key]) << i << " " << key;
    }
  }
  std::ofstream(plan) << "{\"kind\": \"colocation-plan\"}";
  auto [rc3, out3] = RunCommand(Bin() + " sim --experiment colocation --cluster 4x2 --plan " +
                                plan + " --out " + (dir / "c").string());
  EXPECT_NE(rc3, 0);
  EXPECT_NE(out3.find(plan + ": stepSeconds: is missing"), std::string::npos) << out3;
}

TEST(ColocationCliTest, RefusesABadConfigNamingFileKeyAndReason) {
  const auto dir = std::filesystem::temp_directory_path() / "tessera-colocation-cli-bad";
  std::filesystem::remove_all(dir);
  const auto config = dir.string() + ".yaml";
  std::ofstream(config) << "colocation:\n  oversell: 2\n";
  auto [rc, out] = RunCommand(Bin() +
                              " sim --experiment colocation --workload fleet --cluster 2x4 "
                              "--colocation " +
                              config + " --out " + dir.string());
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find(config + ":2: colocation.oversell: must be a number between 0 and 1"),
            std::string::npos)
      << out;
  EXPECT_FALSE(std::filesystem::exists(dir / "summary.json"));
}

}  // namespace
