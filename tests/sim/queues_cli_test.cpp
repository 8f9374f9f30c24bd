// ctest-labels: e2e
// `tessera sim --queues`: the exact command shape of the issue on a 300-job slice of
// Philly-15k, checking summary.json's per-queue and per-policy fields, and a broken queue file
// refused with its file, key and reason.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace tessera {
namespace {

namespace fs = std::filesystem;

std::string Tessera() {
  const char* dir = std::getenv("TESSERA_BIN_DIR");
  const std::string base = dir != nullptr && *dir != '\0' ? dir : "build";
  for (const auto& p : {base + "/tessera", base + "/src/cli/tessera"}) {
    if (fs::exists(p)) return p;
  }
  return base + "/tessera";
}

struct ShellRun {
  int code = -1;
  std::string out;
};

ShellRun Shell(const std::string& cmd) {
  ShellRun r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf{};
  while (std::size_t n = fread(buf.data(), 1, buf.size(), p)) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class QueuesCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessera-queues-cli-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::ifstream in("../shared/traces/philly-15k/philly_data_training.csv");
    ASSERT_TRUE(in) << "Philly-15k trace not found under ../shared/traces";
    std::ofstream slice(dir_ / "philly-300.csv");
    std::string line;
    for (int i = 0; i <= 300 && std::getline(in, line); ++i) slice << line << "\n";
    std::ofstream q(dir_ / "queues.yaml");
    q << "reclaim: {graceSeconds: 60}\nunmatched: hash\nqueues:\n"
         "  - name: org\n    guaranteed: {gpu: 75%}\n"
         "  - name: alpha\n    parent: org\n    guaranteed: {gpu: 50%}\n    users: [\"1\", \"2\"]\n"
         "  - name: beta\n    parent: org\n    guaranteed: {gpu: 25%}\n"
         "  - name: other\n    guaranteed: {gpu: 25%}\n";
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(QueuesCliTest, ReplayWithQueuesWritesPerQueueShares) {
  const auto out = dir_ / "out";
  const ShellRun r =
      Shell(Tessera() + " sim --experiment replay --trace " + (dir_ / "philly-300.csv").string() +
            " --cluster 8x8 --queues " + (dir_ / "queues.yaml").string() +
            " --policy fifo,drf --checkpoint-interval 1800 --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream f(out / "summary.json");
  ASSERT_TRUE(f);
  const auto j = nlohmann::json::parse(f);
  ASSERT_EQ(j["results"].size(), 2U);
  for (const auto& res : j["results"]) {
    SCOPED_TRACE(res["policy"].get<std::string>());
    ASSERT_TRUE(res.contains("preemptions"));
    ASSERT_TRUE(res.contains("gpu_hours_lost_to_preemption"));
    const auto& q = res["queues"];
    for (const char* path : {"org", "org/alpha", "org/beta", "other"}) {
      ASSERT_TRUE(q.contains(path)) << path;
      for (const char* key : {"entitlement", "share_mean", "jct_seconds", "queue_seconds"}) {
        ASSERT_TRUE(q[path].contains(key)) << path << " " << key;
      }
    }
    EXPECT_DOUBLE_EQ(q["org/alpha"]["entitlement"].get<double>(), 0.5);
    EXPECT_DOUBLE_EQ(q["other"]["entitlement"].get<double>(), 0.25);
    // Every job is in exactly one leaf.
    EXPECT_EQ(q["org/alpha"]["jobs"].get<int>() + q["org/beta"]["jobs"].get<int>() +
                  q["other"]["jobs"].get<int>(),
              300);
    EXPECT_EQ(q["org"]["jobs"].get<int>(),
              q["org/alpha"]["jobs"].get<int>() + q["org/beta"]["jobs"].get<int>());
    double held = 0;
    for (const char* leaf : {"org/alpha", "org/beta", "other"}) {
      const double s = q[leaf]["share_mean"].get<double>();
      EXPECT_GE(s, 0);
      EXPECT_LE(s, 1);
      held += q[leaf]["gpu_hours"].get<double>();
    }
    EXPECT_GT(held, 0);
  }
  EXPECT_EQ(j["results"][0]["preemptions"].get<int>(), 0);  // fifo never preempts
}

TEST_F(QueuesCliTest, ABrokenQueueFileIsRefusedWithItsKey) {
  std::ofstream(dir_ / "bad.yaml") << "queues:\n  - name: a\n  - name: b\n    parent: c\n"
                                      "  - name: c\n    parent: b\n";
  const ShellRun r =
      Shell(Tessera() + " sim --experiment replay --trace " + (dir_ / "philly-300.csv").string() +
            " --cluster 8x8 --queues " + (dir_ / "bad.yaml").string() + " --policy drf --out " +
            (dir_ / "out2").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find((dir_ / "bad.yaml").string() +
                       ": key 'queues[1].parent': the parents form a cycle (b -> c -> b)"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "out2" / "summary.json"));
}

}  // namespace
}  // namespace tessera
