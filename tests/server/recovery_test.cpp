// Live recovery policies on the controller, in process on a real SqliteStore and a hand-driven
// clock: replace keeps the healthy ranks on their nodes and moves the lost one, spares holds an
// idle node per leaf back from the scheduler and swaps it in, requeue leaves the gang to the
// scheduler; cordon keeps new work off a node, drain moves running work off it without
// counting a restart; a spare pool as large as a leaf is refused naming the flag; an elastic
// resize in progress survives a controller restart.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <map>

#include "server/controller.h"
#include "store/sqlite_store.h"

namespace tessera {
namespace {

using Json = nlohmann::json;

class RecoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera-recovery-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    controller_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  Result<std::unique_ptr<Controller>> Create() {
    controller_.reset();
    store_.reset();
    auto store = SqliteStore::Open(dir_ + "/state.db");
    if (!store) return std::unexpected(store.error());
    store_ = std::move(*store);
    options_.heartbeat_timeout_ms = 10'000;
    options_.now = [this] { return now_.load(); };
    return Controller::Create(store_.get(), options_);
  }
  void Open() {
    auto c = Create();
    ASSERT_TRUE(c.has_value()) << c.error().message;
    controller_ = std::move(*c);
  }
  void Register(const std::string& node, const std::string& leaf = "") {
    NodeRegistration reg;
    reg.node = node;
    reg.address = "127.0.0.1";
    reg.agent_url = "http://127.0.0.1:1";
    reg.simulated = true;
    reg.cpu_milli = 64000;
    reg.memory_mib = 512 * 1024;
    if (!leaf.empty()) reg.topology = {{"leaf", leaf}};
    for (int i = 0; i < 4; ++i) reg.gpus.push_back({i, "H100", "simulated H100", "SIM", 81920});
    ASSERT_TRUE(controller_->Register(reg).has_value());
    seen_[node] = true;
  }
  // Heartbeats of every node still alive; each task told to run is reported running, each told
  // to stop is reported stopped.
  void BeatAll() {
    for (int round = 0; round < 3; ++round) {
      for (auto& [node, alive] : seen_) {
        if (!alive) continue;
        HeartbeatRequest req;
        for (auto& [id, state] : reported_[node]) {
          TaskReport r;
          r.task_id = id;
          r.state = state;
          r.pid = 100 + static_cast<int>(id);
          if (state != ReportedState::kRunning) r.exit_code = 143;
          req.tasks.push_back(r);
        }
        auto reply = controller_->Heartbeat(node, req, 0);
        ASSERT_TRUE(reply.has_value());
        for (const auto& run : reply->run) reported_[node][run.task_id] = ReportedState::kRunning;
        for (const auto& stop : reply->stop)
          reported_[node][stop.task_id] = ReportedState::kStopped;
        for (auto id : reply->forget) reported_[node].erase(id);
      }
    }
  }
  // Silences `node` past the heartbeat timeout while the others keep beating.
  void Lose(const std::string& node) {
    seen_[node] = false;
    now_ += 11'000;
    BeatAll();
    controller_->CheckLiveness();
    BeatAll();
  }
  Json Job(const std::string& name) {
    auto j = controller_->GetJob("default", name);
    EXPECT_TRUE(j.has_value());
    return j ? *j : Json();
  }
  // Node of each rank of the job's latest attempt.
  std::map<int, std::string> Ranks(const std::string& name) {
    const Json job = Job(name);
    std::map<int, std::string> out;
    for (const auto& t : job["taskList"]) {
      if (t["attempt"] == job["attempt"]) out[t["rank"].get<int>()] = t["node"];
    }
    return out;
  }
  bool HasEvent(const std::string& name, const std::string& type, const std::string& words) {
    const Json job = Job(name);
    for (const auto& e : job["events"]) {
      if (e["type"] == type && e["message"].get<std::string>().find(words) != std::string::npos)
        return true;
    }
    return false;
  }
  static std::string Gang(const std::string& name, int workers, const std::string& extra = "") {
    return "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: " + name +
           "}\nspec: {workers: " + std::to_string(workers) +
           ", gpusPerWorker: 4, maxRestarts: 3, command: [sleep, '600']" + extra + "}\n";
  }
  void Submit(const std::string& spec) {
    auto r = controller_->Submit(spec);
    ASSERT_TRUE(r.has_value()) << r.error().error.message;
  }

  std::string dir_;
  ControllerOptions options_;
  std::atomic<Tick> now_{1'000'000};
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<Controller> controller_;
  std::map<std::string, bool> seen_;
  std::map<std::string, std::map<std::int64_t, ReportedState>> reported_;
};

TEST_F(RecoveryTest, ReplaceKeepsHealthyRanksAndMovesTheLostOne) {
  options_.recovery = RecoveryMode::kReplace;
  Open();
  for (const char* n : {"node-0", "node-1", "node-2", "node-3"}) Register(n);
  Submit(Gang("train", 3));
  ASSERT_EQ(controller_->RunSchedulingCycle(), 1);
  BeatAll();
  const auto before = Ranks("train");
  ASSERT_EQ(before.size(), 3u);
  Lose(before.at(1));
  EXPECT_EQ(Job("train")["phase"], "Pending") << Job("train").dump(2);
  controller_->RunSchedulingCycle();
  BeatAll();
  const auto after = Ranks("train");
  ASSERT_EQ(after.size(), 3u);
  EXPECT_EQ(after.at(0), before.at(0));
  EXPECT_EQ(after.at(2), before.at(2));
  EXPECT_NE(after.at(1), before.at(1));
  EXPECT_EQ(Job("train")["runningTasks"], 3);
  EXPECT_EQ(Job("train")["restarts"], 1);
  EXPECT_TRUE(HasEvent("train", "JobRecovering", "replace: replace 1 rank"));
}

TEST_F(RecoveryTest, SparesAreHeldBackFromTheSchedulerAndSwappedIn) {
  options_.recovery = RecoveryMode::kSpares;
  options_.spares_per_domain = 1;
  options_.topology_levels = {"leaf"};
  Open();
  for (int i = 0; i < 6; ++i) Register("node-" + std::to_string(i), i < 3 ? "l1" : "l2");
  // node-2 and node-5 (the last of each leaf) are spares: a gang of 5 cannot start.
  Submit(Gang("big", 5));
  EXPECT_EQ(controller_->RunSchedulingCycle(), 0);
  auto r = controller_->Cancel("default", "big");
  ASSERT_TRUE(r.has_value());
  Submit(Gang("train", 4));
  ASSERT_EQ(controller_->RunSchedulingCycle(), 1);
  BeatAll();
  const auto before = Ranks("train");
  for (const auto& [rank, node] : before) {
    EXPECT_NE(node, "node-2");
    EXPECT_NE(node, "node-5");
  }
  std::string lost = "node-1";
  Lose(lost);
  controller_->RunSchedulingCycle();
  BeatAll();
  const auto after = Ranks("train");
  std::string replacement;
  for (const auto& [rank, node] : before) {
    if (node == lost)
      replacement = after.at(rank);
    else
      EXPECT_EQ(after.at(rank), node);
  }
  EXPECT_EQ(replacement, "node-2");  // the spare of node-1's leaf
  EXPECT_TRUE(HasEvent("train", "JobRecovering", "1 hot spare"));
}

TEST_F(RecoveryTest, RequeueLeavesTheGangToTheScheduler) {
  Open();
  for (const char* n : {"node-0", "node-1", "node-2"}) Register(n);
  Submit(Gang("train", 2));
  ASSERT_EQ(controller_->RunSchedulingCycle(), 1);
  BeatAll();
  Lose(Ranks("train").at(0));
  EXPECT_EQ(controller_->RunSchedulingCycle(), 1);
  BeatAll();
  EXPECT_EQ(Job("train")["runningTasks"], 2);
  EXPECT_FALSE(HasEvent("train", "JobRecovering", ""));
}

TEST_F(RecoveryTest, CordonKeepsNewWorkOffAndDrainMovesItWithoutARestart) {
  options_.recovery = RecoveryMode::kReplace;
  Open();
  for (const char* n : {"node-0", "node-1", "node-2"}) Register(n);
  ASSERT_TRUE(controller_->OperateNode("node-0", NodeOperation::kCordon).has_value());
  Submit(Gang("train", 2));
  ASSERT_EQ(controller_->RunSchedulingCycle(), 1);
  BeatAll();
  auto before = Ranks("train");
  for (const auto& [rank, node] : before) EXPECT_NE(node, "node-0");
  Json nodes = controller_->ListNodes();
  EXPECT_EQ(nodes[0]["cordoned"], true);
  EXPECT_EQ(nodes[0]["schedulable"], false);

  ASSERT_TRUE(controller_->OperateNode("node-0", NodeOperation::kUncordon).has_value());
  auto drained = controller_->OperateNode(before.at(1), NodeOperation::kDrain);
  ASSERT_TRUE(drained.has_value());
  EXPECT_EQ((*drained)["stopped"].size(), 1u);
  BeatAll();  // the gang stops (SIGTERM, reported stopped)
  controller_->RunSchedulingCycle();
  BeatAll();
  const auto after = Ranks("train");
  EXPECT_EQ(after.at(0), before.at(0));
  EXPECT_EQ(after.at(1), "node-0");  // the only node left: uncordoned
  EXPECT_EQ(Job("train")["restarts"], 0);
  EXPECT_EQ(Job("train")["runningTasks"], 2);

  auto unknown = controller_->OperateNode("node-9", NodeOperation::kCordon);
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().error.code, Error::Code::kNotFound);
  // The cordon is durable.
  ASSERT_TRUE(controller_->OperateNode("node-2", NodeOperation::kCordon).has_value());
  Open();
  nodes = controller_->ListNodes();
  EXPECT_EQ(nodes[2]["cordoned"], true);
}

// An elastic job's resize survives a controller restart between the stop (SIGTERM to every
// rank) and the restart at its new size: the target is durable in its unit's record, so the
// restarted controller binds it there (JobResized) instead of placing the unit afresh, and
// forgets it once done.
TEST_F(RecoveryTest, AResizeInProgressSurvivesAControllerRestart) {
  Open();
  Register("node-0");
  Register("node-1");
  Submit(Gang("elastic", 2, ", elastic: {minWorkers: 1, maxWorkers: 2}"));
  ASSERT_EQ(controller_->RunSchedulingCycle(), 1);
  BeatAll();
  const auto before = Ranks("elastic");
  ASSERT_EQ(before.size(), 2u);
  Submit(Gang("urgent", 1, ", priority: 100"));
  controller_->RunSchedulingCycle();  // shrinks the elastic job: every rank is told to stop
  ASSERT_TRUE(HasEvent("elastic", "JobResizing", "shrinking from 2 workers to 1"));
  EXPECT_EQ(Job("elastic")["phase"], "Restarting");

  Open();     // the controller restarts before the ranks have exited
  BeatAll();  // the agents stop them and report it
  controller_->RunSchedulingCycle();
  BeatAll();
  EXPECT_TRUE(HasEvent("elastic", "JobResized", "resized from 2 workers to 1"))
      << Job("elastic")["events"].dump(2);
  EXPECT_EQ(Job("elastic")["runningTasks"], 1);
  EXPECT_EQ(Job("elastic")["restarts"], 0) << "a resize is not a failure";
  EXPECT_EQ(Ranks("elastic").at(0), before.at(0)) << "rank 0 stays where it ran";
  EXPECT_EQ(Job("urgent")["runningTasks"], 1);

  Open();  // done and forgotten: no second resize after another restart
  BeatAll();
  controller_->RunSchedulingCycle();
  const Json job = Job("elastic");
  int resized = 0;
  for (const auto& e : job["events"]) resized += e["type"] == "JobResized";
  EXPECT_EQ(resized, 1);
  EXPECT_EQ(Job("elastic")["runningTasks"], 1);
}

TEST_F(RecoveryTest, SparePoolAsLargeAsALeafIsRefusedNamingTheFlag) {
  options_.topology_levels = {"leaf"};
  Open();
  Register("node-0", "l1");
  Register("node-1", "l1");
  Register("node-2", "l2");
  options_.spares_per_domain = 1;
  auto c = Create();
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().message,
            "--spares-per-domain: 1 spare node(s) per leaf domain, but leaf l2 has 1 node(s); at "
            "least one must be left to run work");
}

TEST_F(RecoveryTest, SpecRecoveryIsParsedAndBadValuesAreRefused) {
  Open();
  Register("node-0");
  auto bad = controller_->Submit(Gang("x", 1, ", recovery: restart"));
  ASSERT_FALSE(bad.has_value());
  ASSERT_EQ(bad.error().fields.size(), 1u);
  EXPECT_EQ(bad.error().fields[0].field, "spec.recovery");
  EXPECT_EQ(bad.error().fields[0].reason,
            "must be one of requeue, replace, spares, got \"restart\"");
  Submit(Gang("y", 1, ", recovery: spares"));
  const Json y = Job("y");
  EXPECT_EQ(y["spec"]["spec"]["recovery"], "spares") << y["spec"].dump();
}

}  // namespace
}  // namespace tessera
