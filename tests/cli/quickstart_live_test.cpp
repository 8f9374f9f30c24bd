// ctest-labels: e2e
// The live part of the README's first command, exactly as the quickstart runs it:
// scripts/quickstart-live.sh against this build's binaries with a temporary state directory.
// Every job spec in examples/jobs/ must be accepted (so an example that is not a valid job
// fails CI), the jobs must be listed, and the cluster must come down. The slow simulation part
// of scripts/quickstart.sh is not run here.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "server/process_harness.h"

namespace tessera::testing {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;

// The example job specs and how many job documents each holds (one top-level `kind:` each).
std::map<std::string, int> ExampleJobDocuments() {
  std::map<std::string, int> docs;
  for (const auto& e : std::filesystem::directory_iterator("examples/jobs")) {
    if (e.path().extension() != ".yaml") continue;
    std::ifstream in(e.path());
    int kinds = 0;
    for (std::string line; std::getline(in, line);) kinds += line.starts_with("kind:");
    docs["examples/jobs/" + e.path().filename().string()] = kinds;
  }
  return docs;
}

class QuickstartLiveTest : public ::testing::Test {
 protected:
  void TearDown() override {
    // Brings the cluster down even when the test failed half-way.
    RunCommand({BinDir() + "/tessera", "down", "--state", state_.path()}, 60);
  }
  CommandResult Tessera(std::vector<std::string> args) {
    args.insert(args.begin(), BinDir() + "/tessera");
    args.insert(args.end(), {"--state", state_.path()});
    return RunCommand(args, 60);
  }
  TempDir state_{"tessera-quickstart"};
};

TEST_F(QuickstartLiveTest, EveryExampleJobSpecIsAcceptedAndTheClusterComesDown) {
  Watchdog watchdog(180s, "quickstart live test");
  const auto examples = ExampleJobDocuments();
  ASSERT_GE(examples.size(), 5u) << "examples/jobs/ should hold one spec of each kind";
  int expected_jobs = 0;
  for (const auto& [file, docs] : examples) {
    EXPECT_GE(docs, 1) << file << " holds no job document (kind:)";
    expected_jobs += docs;
  }

  auto run =
      RunCommand({"scripts/quickstart-live.sh", "--state", state_.path(), "--bin", BinDir()}, 150);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(run.err.find("error:"), std::string::npos) << run.err;
  EXPECT_NE(run.out.find("Cluster up in " + state_.path()), std::string::npos) << run.out;

  // One "job QUEUE/NAME submitted" line per job document, and the hints at the end.
  const std::regex submitted(R"(job ([a-z0-9/-]+)/([a-z0-9-]+) submitted)");
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(run.out.begin(), run.out.end(), submitted);
       it != std::sregex_iterator(); ++it) {
    names.insert((*it)[2].str());
  }
  EXPECT_EQ(static_cast<int>(names.size()), expected_jobs) << run.out;
  EXPECT_NE(run.out.find("The cluster keeps running. Try:"), std::string::npos) << run.out;

  // The listing the script printed names every job, and the API agrees.
  auto jobs = Tessera({"get", "jobs", "-o", "json"});
  ASSERT_EQ(jobs.exit_code, 0) << jobs.err;
  const Json list = Json::parse(jobs.out, nullptr, false);
  ASSERT_TRUE(list.is_array()) << jobs.out;
  EXPECT_EQ(static_cast<int>(list.size()), expected_jobs) << jobs.out;
  for (const auto& j : list) {
    const std::string name = j["metadata"].value("name", "");
    EXPECT_TRUE(names.contains(name)) << name;
    EXPECT_NE(run.out.find(name), std::string::npos) << name << " missing from get jobs";
  }

  // A second run on the same directory would find the jobs there: it is refused, and the
  // running cluster is left alone.
  auto again =
      RunCommand({"scripts/quickstart-live.sh", "--state", state_.path(), "--bin", BinDir()}, 60);
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("is not empty; the quickstart starts a fresh cluster"),
            std::string::npos)
      << again.err;
  EXPECT_EQ(Tessera({"get", "jobs"}).exit_code, 0) << "still up";

  auto down = Tessera({"down"});
  ASSERT_EQ(down.exit_code, 0) << down.err;
  EXPECT_NE(down.out.find("stopped tesserad"), std::string::npos) << down.out;
  EXPECT_NE(down.out.find("stopped 2 agent(s)"), std::string::npos) << down.out;
  auto gone = Tessera({"get", "jobs"});
  EXPECT_NE(gone.exit_code, 0);
  EXPECT_NE(gone.err.find("no running cluster"), std::string::npos) << gone.err;
}

}  // namespace
}  // namespace tessera::testing
