// ctest-labels: e2e
// What a newcomer meets first, through the real `tessera` against a `tessera up` cluster: the
// help for a bare or unknown command, the whole queue tree before any job, filters that say
// when they match nothing, jobs listed as objects that submit again, and a job that can never
// fit refused at submit unless queued anyway.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "server/process_harness.h"

namespace tessera::testing {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;

class NewcomerCliTest : public ::testing::Test {
 protected:
  void SetUp() override { tessera_ = BinDir() + "/tessera"; }
  void TearDown() override {
    if (up_) RunCommand({tessera_, "down", "--state", state_.path()}, 60);
  }
  CommandResult Tessera(std::vector<std::string> args, const std::string& stdin_text = "") {
    args.insert(args.begin(), tessera_);
    return RunCommand(args, 60, stdin_text, {"TESSERA_STATE=" + state_.path()});
  }
  void Up(std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"up", "--state", state_.path(), "--agents",
                                     "2",  "--gpus",  "4xH100"};
    args.insert(args.end(), more.begin(), more.end());
    auto up = Tessera(args);
    up_ = true;
    ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  }
  Json JsonOut(std::vector<std::string> args) {
    args.insert(args.end(), {"-o", "json"});
    auto r = Tessera(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto j = Json::parse(r.out, nullptr, false);
    return j.is_discarded() ? Json() : j;
  }
  std::string Phase(const std::string& name) {
    auto r = JsonOut({"get", "jobs", name});
    return r.is_object() ? r["status"].value("phase", "") : "";
  }

  std::string tessera_;
  TempDir state_{"tessera-newcomer"};
  TempDir files_{"tessera-newcomer-files"};
  bool up_ = false;
};

std::string Batch(const std::string& name, const std::string& queue, int gpus) {
  return "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: " + name + ", queue: " + queue +
         "}\nspec: {tasks: 1, gpusPerTask: " + std::to_string(gpus) +
         ", command: [sleep, \"60\"]}\n";
}

TEST(NewcomerCliHelpTest, ABareOrUnknownCommandPrintsTheHelp) {
  const std::string tessera = BinDir() + "/tessera";
  auto bare = RunCommand({tessera}, 10);
  EXPECT_EQ(bare.exit_code, 0) << bare.err;
  EXPECT_NE(bare.out.find("submit"), std::string::npos) << bare.out;
  EXPECT_NE(bare.out.find("Subcommands:"), std::string::npos) << bare.out;
  EXPECT_EQ(bare.err.find("A subcommand is required"), std::string::npos) << bare.err;

  auto unknown = RunCommand({tessera, "sumbit", "-f", "x.yaml"}, 10);
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("Subcommands:"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("unknown command: sumbit"), std::string::npos) << unknown.err;
}

// Under drf with examples/config/queues.yaml: every queue of the tree, with its guarantee, is
// listed before any job names it.
TEST_F(NewcomerCliTest, TheWholeQueueTreeIsListedFromTheStart) {
  Watchdog watchdog(90s, "queue tree test");
  Up({"--queue-policy", "drf", "--queues", "examples/config/queues.yaml"});
  const Json queues = JsonOut({"get", "queues"});
  std::map<std::string, Json> by_name;
  for (const auto& q : queues) by_name[q["name"].get<std::string>()] = q;
  for (const char* name :
       {"research", "research/vision", "research/speech", "product", "sandbox"}) {
    ASSERT_TRUE(by_name.contains(name)) << name << " missing: " << queues.dump(2);
    EXPECT_EQ(by_name[name]["pendingJobs"], 0) << name;
    EXPECT_TRUE(by_name[name].contains("guaranteedGpus")) << name;
    EXPECT_TRUE(by_name[name].contains("dominantShare")) << name;
  }
  // research is guaranteed 50% of the 8 registered GPUs, research/vision 25%.
  EXPECT_EQ(by_name["research"]["guaranteedGpus"], 4.0);
  EXPECT_EQ(by_name["research/vision"]["guaranteedGpus"], 2.0);
  EXPECT_EQ(by_name["research/vision"]["parent"], "research");

  auto table = Tessera({"get", "queues"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  for (const char* column : {"GUARANTEED", "BORROW-LIMIT", "ALLOCATED", "SHARE", "PENDING"})
    EXPECT_NE(table.out.find(column), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("  research/vision"), std::string::npos) << "indented under research\n"
                                                                    << table.out;

  // A job of a leaf shows in its queue and in its parent's.
  ASSERT_EQ(Tessera({"submit", "-f", "-"}, Batch("eval", "research/vision", 1)).exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return Phase("eval") == "Running"; }, 20));
  for (const auto& q : JsonOut({"get", "queues"})) {
    if (q["name"] == "research" || q["name"] == "research/vision") {
      EXPECT_EQ(q["gpusAllocated"], 1.0) << q.dump();
      EXPECT_EQ(q["activeJobs"], 1) << q.dump();
    }
  }
}

TEST_F(NewcomerCliTest, FiltersSayWhenNothingMatchesAndPhasesAreChecked) {
  Watchdog watchdog(90s, "filter test");
  Up();
  auto none = Tessera({"get", "jobs"});
  EXPECT_EQ(none.exit_code, 0) << none.err;
  EXPECT_NE(none.out.find("No jobs yet"), std::string::npos) << none.out;
  ASSERT_EQ(Tessera({"submit", "-f", "-"}, Batch("one", "default", 1)).exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return Phase("one") == "Running"; }, 20));

  auto running = Tessera({"get", "jobs", "--phase", "running"});  // any case
  EXPECT_EQ(running.exit_code, 0) << running.err;
  EXPECT_NE(running.out.find("one"), std::string::npos) << running.out;
  auto failed = Tessera({"get", "jobs", "--phase", "FAILED"});
  EXPECT_EQ(failed.exit_code, 0) << failed.err;
  EXPECT_EQ(failed.out, "No jobs match --phase Failed.\n");
  auto other_queue = Tessera({"get", "jobs", "--queue", "nlp", "--phase", "Running"});
  EXPECT_EQ(other_queue.out, "No jobs match --queue nlp --phase Running.\n");
  EXPECT_EQ(JsonOut({"get", "jobs", "--phase", "Failed"}), Json::array()) << "scripts get []";

  auto bogus = Tessera({"get", "jobs", "--phase", "Runing"});
  EXPECT_EQ(bogus.exit_code, 1);
  EXPECT_NE(bogus.err.find("--phase Runing: not a job phase; expected one of Pending, Running, "
                           "Stopping, Restarting, Cancelling, Succeeded, Failed, Cancelled"),
            std::string::npos)
      << bogus.err;
  auto missing = Tessera({"get", "job", "nope"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("no jobs named nope"), std::string::npos) << missing.err;
}

// get -o yaml / -o json: objects (apiVersion, kind, metadata, spec, status) that submit
// again, one job alone or a list; nodes keep their flat fields.
TEST_F(NewcomerCliTest, ListedJobsSubmitAgain) {
  Watchdog watchdog(120s, "round trip test");
  Up();
  ASSERT_EQ(Tessera({"submit", "-f", "examples/jobs/training-job.yaml"}).exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return Phase("demo-train") == "Running"; }, 20));

  const Json list = JsonOut({"get", "jobs"});
  ASSERT_TRUE(list.is_array()) << list.dump();
  ASSERT_EQ(list.size(), 1u);
  const Json& job = list[0];
  EXPECT_EQ(job["apiVersion"], "tessera/v1");
  EXPECT_EQ(job["kind"], "TrainingJob");
  EXPECT_EQ(job["metadata"]["name"], "demo-train");
  EXPECT_EQ(job["spec"]["workers"], 2);
  for (const char* field : {"phase", "runningTasks", "restarts", "submitTimeMs", "startTimeMs"})
    EXPECT_TRUE(job["status"].contains(field)) << field << ": " << job.dump(2);
  EXPECT_EQ(job["status"]["phase"], "Running");
  const Json nodes = JsonOut({"get", "nodes"});
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0]["gpuCount"], 4);
  EXPECT_TRUE(nodes[0].contains("agentUrl"));

  // One job as YAML, written to a file, cancelled and purged, then submitted from that file.
  auto yaml = Tessera({"get", "job", "demo-train", "-o", "yaml"});
  ASSERT_EQ(yaml.exit_code, 0) << yaml.err;
  EXPECT_EQ(yaml.out.rfind("apiVersion: tessera/v1", 0), 0u) << "one object, not a list\n"
                                                             << yaml.out;
  const std::string file = files_.path() + "/demo-train.yaml";
  std::ofstream(file) << yaml.out;
  ASSERT_EQ(Tessera({"cancel", "demo-train", "--wait"}).exit_code, 0);
  auto purge = Tessera({"cancel", "demo-train", "--purge"});
  ASSERT_EQ(purge.exit_code, 0) << purge.err;
  auto again = Tessera({"submit", "-f", file});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("job default/demo-train submitted (TrainingJob, 2 task(s), 8 GPU(s))"),
            std::string::npos)
      << again.out;
  EXPECT_TRUE(WaitFor([&] { return Phase("demo-train") == "Running"; }, 20));

  // The whole list as YAML, renamed, submits every job of it.
  Json renamed = JsonOut({"get", "jobs"});
  ASSERT_EQ(renamed.size(), 1u);
  renamed[0]["metadata"]["name"] = "demo-train-copy";
  renamed.push_back(renamed[0]);
  renamed[1]["metadata"]["name"] = "demo-train-copy-2";
  const std::string list_file = files_.path() + "/list.json";
  std::ofstream(list_file) << renamed.dump(2);
  auto copies = Tessera({"submit", "-f", list_file, "--hold"});
  ASSERT_EQ(copies.exit_code, 0) << copies.err;
  EXPECT_NE(copies.out.find("demo-train-copy submitted"), std::string::npos) << copies.out;
  EXPECT_NE(copies.out.find("demo-train-copy-2 submitted"), std::string::npos) << copies.out;
  auto list_yaml = Tessera({"get", "jobs", "-o", "yaml"});
  EXPECT_EQ(list_yaml.out.rfind("- apiVersion: tessera/v1", 0), 0u) << "a YAML sequence\n"
                                                                    << list_yaml.out;
}

// A job that can never fit the 2 x 4-GPU cluster is refused with the reason, as sbatch
// refuses it; --queue-anyway queues it, and it says why it waits.
TEST_F(NewcomerCliTest, AJobThatCanNeverFitIsRefusedUnlessQueuedAnyway) {
  Watchdog watchdog(90s, "fit test");
  Up();
  const std::string big =
      "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: big}\n"
      "spec: {workers: 1, gpusPerWorker: 8, command: [sleep, \"60\"]}\n";
  auto refused = Tessera({"submit", "-f", "-"}, big);
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find(
                "spec.gpusPerWorker: 8 GPUs per worker, and the largest registered node has 4"),
            std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("--queue-anyway"), std::string::npos) << refused.err;
  EXPECT_EQ(Tessera({"get", "job", "big"}).exit_code, 1) << "nothing stored";

  const std::string wide =
      "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: wide}\n"
      "spec: {workers: 3, gpusPerWorker: 4, command: [sleep, \"60\"]}\n";
  auto too_many = Tessera({"submit", "-f", "-"}, wide);
  EXPECT_EQ(too_many.exit_code, 1);
  EXPECT_NE(too_many.err.find("spec.workers: 3 workers of 4 GPUs must run at once"),
            std::string::npos)
      << too_many.err;
  auto models = Tessera({"submit", "-f", "-"},
                        "apiVersion: tessera/v1\nkind: DevSession\n"
                        "metadata: {name: dev}\nspec: {gpus: 1, "
                        "gpuModels: [A100], command: [sleep, \"60\"]}\n");
  EXPECT_EQ(models.exit_code, 1);
  EXPECT_NE(models.err.find("spec.gpuModels: no registered node has A100 (the cluster has H100)"),
            std::string::npos)
      << models.err;

  auto anyway = Tessera({"submit", "--queue-anyway", "-f", "-"}, big);
  ASSERT_EQ(anyway.exit_code, 0) << anyway.err;
  EXPECT_NE(anyway.out.find("big submitted"), std::string::npos) << anyway.out;
  EXPECT_NE(anyway.out.find("queued anyway"), std::string::npos) << anyway.out;
  std::string message;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto j = JsonOut({"get", "job", "big"});
        message = j.is_object() ? j["status"].value("message", "") : "";
        return message.find("unschedulable") != std::string::npos;
      },
      20))
      << message;
  EXPECT_EQ(Phase("big"), "Pending");
}

}  // namespace
}  // namespace tessera::testing
