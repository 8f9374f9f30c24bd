// The controller's state machine in process, on a real SqliteStore and a hand-driven clock:
// binds, agent reports, exits, restarts within maxRestarts, lost nodes, strays, cancel, a
// restart of the controller that re-adopts running tasks, a randomized run checking that no
// GPU is ever bound to two live tasks, and one checking that the job index (phase listings,
// /v1/status and /v1/queues counts) agrees with a pass over every job, restarts included.
#include "server/controller.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <random>
#include <thread>

#include "store/sqlite_store.h"

namespace tessera {
namespace {

using Json = nlohmann::json;

class ControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera-controller-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    Open();
  }
  void TearDown() override {
    controller_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Open() {
    controller_.reset();
    store_.reset();
    auto store = SqliteStore::Open(dir_ + "/state.db");
    ASSERT_TRUE(store.has_value()) << store.error().message;
    store_ = std::move(*store);
    ControllerOptions options;
    options.heartbeat_timeout_ms = 10'000;
    options.now = [this] { return now_.load(); };
    options.scheduler = scheduler_;
    auto c = Controller::Create(store_.get(), options);
    ASSERT_TRUE(c.has_value()) << c.error().message;
    controller_ = std::move(*c);
  }
  void Register(const std::string& node, int gpus = 4) {
    NodeRegistration reg;
    reg.node = node;
    reg.address = "10.0.0." + std::to_string(node.back() - '0' + 1);
    reg.agent_url = "http://127.0.0.1:1";
    reg.simulated = true;
    reg.cpu_milli = 64000;
    reg.memory_mib = 512 * 1024;
    for (int i = 0; i < gpus; ++i) reg.gpus.push_back({i, "H100", "simulated H100", "SIM", 81920});
    ASSERT_TRUE(controller_->Register(reg).has_value());
  }
  Json Submit(const std::string& spec) {
    auto r = controller_->Submit(spec);
    EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().error.message);
    return r ? *r : Json();
  }
  Json Job(const std::string& name, const std::string& queue = "default") {
    auto j = controller_->GetJob(queue, name);
    EXPECT_TRUE(j.has_value());
    return j ? *j : Json();
  }
  HeartbeatReply Beat(const std::string& node, std::vector<TaskReport> tasks = {}) {
    HeartbeatRequest req;
    req.tasks = std::move(tasks);
    auto r = controller_->Heartbeat(node, req, 0);
    EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().error.message);
    return r ? *r : HeartbeatReply{};
  }
  static TaskReport Running(std::int64_t id, int pid) {
    TaskReport r;
    r.task_id = id;
    r.state = ReportedState::kRunning;
    r.pid = pid;
    return r;
  }
  static TaskReport Exited(std::int64_t id, int code,
                           ReportedState state = ReportedState::kExited) {
    TaskReport r;
    r.task_id = id;
    r.state = state;
    r.exit_code = code;
    return r;
  }
  static std::string Gang(const std::string& name, int workers, int gpus, int restarts = 0) {
    return "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: " + name +
           "}\nspec: {workers: " + std::to_string(workers) +
           ", gpusPerWorker: " + std::to_string(gpus) +
           ", maxRestarts: " + std::to_string(restarts) + ", command: [python3, train.py]}\n";
  }

  std::string dir_;
  SchedulerConfig scheduler_;
  std::atomic<Tick> now_{1'000'000};
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<Controller> controller_;
};

// With priority preemption, a job of higher priority that does not fit stops the victim gang
// (SIGTERM via the agents, its grace period), starts on the GPUs once they are free, and the
// victim is requeued without counting a restart, to start again as attempt 2.
TEST_F(ControllerTest, PriorityPreemptionStopsTheVictimThenStartsThePreemptor) {
  scheduler_.priority_preemption = true;
  Open();
  Register("node-0");
  Register("node-1");
  Submit(Gang("victim", 2, 4));
  ASSERT_EQ(controller_->RunSchedulingCycle(), 1);
  std::map<std::string, std::int64_t> victim_task;
  for (const std::string node : {"node-0", "node-1"}) {
    auto reply = Beat(node);
    ASSERT_EQ(reply.run.size(), 1u);
    victim_task[node] = reply.run[0].task_id;
    Beat(node, {Running(reply.run[0].task_id, 100)});
  }
  Submit(
      "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: urgent}\nspec: {priority: "
      "100, workers: 1, gpusPerWorker: 4, gracePeriodSeconds: 7, command: [run]}\n");

  // The victim is told to stop; the preemptor waits for its GPUs.
  EXPECT_EQ(controller_->RunSchedulingCycle(), 0);
  Json victim = Job("victim");
  EXPECT_EQ(victim["phase"], "Restarting");
  bool preempted = false;
  for (const auto& e : victim["events"]) {
    if (e["type"] != "JobPreempted") continue;
    preempted = true;
    EXPECT_NE(e["message"].get<std::string>().find("; preempted by job/default/urgent"),
              std::string::npos)
        << "the event names the preemptor: " << e["message"];
  }
  EXPECT_TRUE(preempted) << victim["events"].dump(2);
  EXPECT_EQ(Job("urgent")["phase"], "Pending");
  for (const std::string node : {"node-0", "node-1"}) {
    auto reply = Beat(node, {Running(victim_task[node], 100)});
    ASSERT_EQ(reply.stop.size(), 1u);
    EXPECT_EQ(reply.stop[0].task_id, victim_task[node]);
    EXPECT_EQ(reply.stop[0].grace_period_seconds, 30);  // the victim's own grace period
  }
  // While the victim stops, a second cycle preempts nobody and binds nothing.
  EXPECT_EQ(controller_->RunSchedulingCycle(), 0);
  // node-0's worker saved its checkpoint and exited: the preemptor starts there at once.
  Beat("node-0", {Exited(victim_task["node-0"], 0)});
  ASSERT_EQ(controller_->RunSchedulingCycle(), 1);
  Json urgent = Job("urgent");
  EXPECT_EQ(urgent["phase"], "Running");
  EXPECT_EQ(urgent["taskList"][0]["node"], "node-0");
  // node-1's worker exits too: the victim is requeued, not failed, and not a restart.
  Beat("node-1", {Exited(victim_task["node-1"], 0)});
  victim = Job("victim");
  EXPECT_EQ(victim["phase"], "Pending");
  EXPECT_EQ(victim["restarts"], 0);
  // It waits for the preemptor (8 GPUs needed, 4 free) and preempts nothing of higher priority.
  EXPECT_EQ(controller_->RunSchedulingCycle(), 0);
  EXPECT_EQ(Job("urgent")["phase"], "Running");
  const auto urgent_task = urgent["taskList"][0]["id"].get<std::int64_t>();
  Beat("node-0", {Running(urgent_task, 200)});
  Beat("node-0", {Exited(urgent_task, 0)});
  EXPECT_EQ(Job("urgent")["phase"], "Succeeded");
  ASSERT_EQ(controller_->RunSchedulingCycle(), 1);
  victim = Job("victim");
  EXPECT_EQ(victim["phase"], "Running");
  EXPECT_EQ(victim["attempt"], 2);
  EXPECT_EQ(victim["restarts"], 0);
}

TEST_F(ControllerTest, AGangRunsToSuccess) {
  Register("node-0");
  Register("node-1");
  EXPECT_EQ(Submit(Gang("train", 2, 4))["phase"], "Pending");
  ASSERT_EQ(controller_->RunSchedulingCycle(), 1);
  Json job = Job("train");
  EXPECT_EQ(job["phase"], "Running");
  ASSERT_EQ(job["taskList"].size(), 2u);
  std::set<std::string> nodes;
  for (const auto& t : job["taskList"]) {
    EXPECT_EQ(t["state"], "Assigned");
    EXPECT_EQ(t["gpus"], Json::array({0, 1, 2, 3}));
    nodes.insert(t["node"].get<std::string>());
  }
  EXPECT_EQ(nodes.size(), 2u);
  // Each agent is told to launch its task, with the gang's rendezvous.
  std::map<std::string, TaskLaunch> launches;
  for (const std::string node : {"node-0", "node-1"}) {
    auto reply = Beat(node);
    ASSERT_EQ(reply.run.size(), 1u);
    launches[node] = reply.run[0];
    EXPECT_EQ(reply.run[0].world_size, 2);
    EXPECT_EQ(reply.run[0].command, (std::vector<std::string>{"python3", "train.py"}));
  }
  EXPECT_EQ(launches["node-0"].master_addr, launches["node-1"].master_addr);
  EXPECT_EQ(launches["node-0"].master_port, launches["node-1"].master_port);
  EXPECT_NE(launches["node-0"].rank, launches["node-1"].rank);
  // They start, then exit 0.
  for (auto& [node, l] : launches)
    EXPECT_TRUE(Beat(node, {Running(l.task_id, 100 + l.rank)}).run.empty());
  EXPECT_EQ(Job("train")["runningTasks"], 2);
  for (auto& [node, l] : launches) {
    auto reply = Beat(node, {Exited(l.task_id, 0)});
    EXPECT_EQ(reply.forget, std::vector<std::int64_t>{l.task_id})
        << "recorded: the agent may forget it";
  }
  job = Job("train");
  EXPECT_EQ(job["phase"], "Succeeded");
  EXPECT_GT(job["finishTimeMs"].get<std::int64_t>(), 0);
}

// One agent emulating several nodes: one batched heartbeat answers for each node with its own
// launches, names the nodes the controller does not know, keeps every node alive, and a batch
// of exits is recorded in one call.
TEST_F(ControllerTest, BatchedHeartbeatsAndExitsServeEveryEmulatedNode) {
  Register("sim-0");
  Register("sim-1");
  Submit(Gang("train", 2, 4));
  ASSERT_EQ(controller_->RunSchedulingCycle(), 1);

  NodesHeartbeatRequest req;
  req.nodes["sim-0"];
  req.nodes["sim-1"];
  req.nodes["sim-9"];  // never registered
  auto reply = controller_->HeartbeatNodes(req, 0);
  ASSERT_TRUE(reply.has_value()) << reply.error().error.message;
  EXPECT_EQ(reply->unknown, std::vector<std::string>{"sim-9"});
  ASSERT_EQ(reply->nodes.size(), 2u);
  std::map<std::string, std::int64_t> task_of;
  for (const auto& [node, r] : reply->nodes) {
    ASSERT_EQ(r.run.size(), 1u) << node;
    task_of[node] = r.run[0].task_id;
  }
  EXPECT_NE(task_of["sim-0"], task_of["sim-1"]);
  // Both start; nothing more to do for either: an empty answer, and no node left out.
  req.nodes.erase("sim-9");
  for (auto& [node, hb] : req.nodes) hb.tasks = {Running(task_of[node], 7)};
  reply = controller_->HeartbeatNodes(req, 0);
  ASSERT_TRUE(reply.has_value());
  EXPECT_TRUE(reply->nodes.empty());
  EXPECT_EQ(Job("train")["runningTasks"], 2);

  // Silence beyond the timeout would lose a node; the batched heartbeat keeps both alive.
  now_ += 8'000;
  ASSERT_TRUE(controller_->HeartbeatNodes(req, 0).has_value());
  now_ += 8'000;
  controller_->CheckLiveness();
  EXPECT_EQ(Job("train")["phase"], "Running");

  // Both exits in one report; a report about another node's task is ignored.
  NodesHeartbeatRequest exits;
  exits.nodes["sim-0"].tasks = {Exited(task_of["sim-0"], 0), Exited(task_of["sim-1"], 3)};
  ASSERT_TRUE(controller_->ReportTasks(exits).has_value());
  EXPECT_EQ(Job("train")["phase"], "Running") << "sim-1's task is not sim-0's to report";
  exits.nodes.clear();
  exits.nodes["sim-1"].tasks = {Exited(task_of["sim-1"], 0)};
  ASSERT_TRUE(controller_->ReportTasks(exits).has_value());
  EXPECT_EQ(Job("train")["phase"], "Succeeded");
}

TEST_F(ControllerTest, AFailureRestartsTheWholeGangWithinMaxRestarts) {
  Register("node-0");
  Register("node-1");
  Submit(Gang("flaky", 2, 4, /*restarts=*/1));
  ASSERT_EQ(controller_->RunSchedulingCycle(), 1);
  auto a = Beat("node-0").run.at(0), b = Beat("node-1").run.at(0);
  Beat("node-0", {Running(a.task_id, 1)});
  Beat("node-1", {Running(b.task_id, 2)});
  // One worker fails: the other is told to stop; the gang is requeued once it has.
  Beat("node-0", {Exited(a.task_id, 3)});
  EXPECT_EQ(Job("flaky")["phase"], "Restarting");
  auto reply = Beat("node-1", {Running(b.task_id, 2)});
  ASSERT_EQ(reply.stop.size(), 1u);
  EXPECT_EQ(reply.stop[0].task_id, b.task_id);
  Beat("node-1", {Exited(b.task_id, 143, ReportedState::kStopped)});
  EXPECT_EQ(Job("flaky")["phase"], "Pending");
  ASSERT_EQ(controller_->RunSchedulingCycle(), 1);
  Json job = Job("flaky");
  EXPECT_EQ(job["attempt"], 2);
  EXPECT_EQ(job["restarts"], 1);
  // The second failure exhausts maxRestarts.
  auto a2 = Beat("node-0").run.at(0), b2 = Beat("node-1").run.at(0);
  EXPECT_EQ(a2.attempt, 2);
  Beat("node-0", {Exited(a2.task_id, 1)});
  Beat("node-1", {Exited(b2.task_id, 0, ReportedState::kFailedToStart)});
  job = Job("flaky");
  EXPECT_EQ(job["phase"], "Failed");
  EXPECT_NE(job.value("message", "").find("exited with code 1"), std::string::npos) << job.dump(2);
}

TEST_F(ControllerTest, ALostNodeLosesItsTasksAndTheGangIsRequeued) {
  Register("node-0");
  Register("node-1");
  Register("node-2");
  Submit(Gang("big", 2, 4, 2));
  ASSERT_EQ(controller_->RunSchedulingCycle(), 1);
  std::string victim;
  const Json first = Job("big");
  for (const auto& t : first["taskList"]) victim = t["node"];
  now_ += 5'000;
  for (const std::string n : {"node-0", "node-1", "node-2"}) {
    if (n != victim) Beat(n);
  }
  now_ += 6'000;  // the victim has now been silent for 11 s
  controller_->CheckLiveness();
  for (const auto& n : controller_->ListNodes()) {
    EXPECT_EQ(n["status"], n["name"] == victim ? "Lost" : "Ready");
  }
  // The other member is stopped (Assigned, never launched: stopped at once on its next beat).
  for (const std::string n : {"node-0", "node-1", "node-2"}) {
    if (n != victim) Beat(n);
  }
  EXPECT_EQ(Job("big")["phase"], "Pending");
  ASSERT_EQ(controller_->RunSchedulingCycle(), 1);
  const Json second = Job("big");
  for (const auto& t : second["taskList"]) {
    if (t["attempt"] == 2) {
      EXPECT_NE(t["node"], victim);
    }
    if (t["attempt"] == 1 && t["node"] == victim) {
      EXPECT_EQ(t["state"], "Lost");
    }
  }
  // The node comes back; it is schedulable again.
  Beat(victim);
  for (const auto& n : controller_->ListNodes()) EXPECT_EQ(n["status"], "Ready");
}

TEST_F(ControllerTest, ARestartedControllerRecoversAndReadoptsRunningTasks) {
  Register("node-0");
  Submit(Gang("keep", 1, 2));
  Submit(Gang("waiting", 1, 4));
  ASSERT_EQ(controller_->RunSchedulingCycle(), 1);
  auto l = Beat("node-0").run.at(0);
  Beat("node-0", {Running(l.task_id, 4242)});
  Open();  // a new controller on the same store
  EXPECT_EQ(Job("keep")["phase"], "Running");
  EXPECT_EQ(Job("waiting")["phase"], "Pending");
  auto reply = Beat("node-0", {Running(l.task_id, 4242)});
  EXPECT_TRUE(reply.run.empty()) << "not launched again";
  EXPECT_TRUE(reply.stop.empty());
  const Json job = Job("keep");
  EXPECT_EQ(job["attempt"], 1);
  EXPECT_EQ(job["taskList"][0]["pid"], 4242);
  bool readopted = false;
  for (const auto& e : job["events"]) readopted |= e["type"] == "TaskReadopted";
  EXPECT_TRUE(readopted) << job.dump(2);
  EXPECT_EQ(controller_->RunSchedulingCycle(), 0) << "2 of 4 GPUs are still held";
}

TEST_F(ControllerTest, StraysAreStoppedAndKeepTheirNodeUnschedulable) {
  Register("node-0");
  auto reply = Beat("node-0", {Running(999, 77)});
  ASSERT_EQ(reply.stop.size(), 1u);
  EXPECT_EQ(reply.stop[0].task_id, 999);
  EXPECT_FALSE(controller_->ListNodes()[0]["schedulable"].get<bool>());
  Submit(Gang("blocked", 1, 1));
  EXPECT_EQ(controller_->RunSchedulingCycle(), 0);
  reply = Beat("node-0", {Exited(999, 143, ReportedState::kStopped)});
  EXPECT_EQ(reply.forget, std::vector<std::int64_t>{999});
  EXPECT_TRUE(controller_->ListNodes()[0]["schedulable"].get<bool>());
  EXPECT_EQ(controller_->RunSchedulingCycle(), 1);
}

// The agent reports exits at once on one connection and its heartbeat on another, so a
// heartbeat built while a task still ran can arrive after the task's exit was recorded. Its
// "running" is stale, not a stray: the node stays schedulable. A newer "running" for the ended
// task is a stray.
TEST_F(ControllerTest, AHeartbeatOlderThanAnAppliedExitReportIsNotAStray) {
  Register("node-0");
  Submit(Gang("one", 1, 4));
  ASSERT_EQ(controller_->RunSchedulingCycle(), 1);
  const auto launch = Beat("node-0").run.at(0);
  auto running = Running(launch.task_id, 70);
  running.seq = 10;
  Beat("node-0", {running});
  auto exited = Exited(launch.task_id, 0);
  exited.seq = 30;
  ASSERT_TRUE(controller_->ReportTask("node-0", exited).has_value());
  EXPECT_EQ(Job("one")["phase"], "Succeeded");

  running.seq = 20;  // built before the exit, answered after it
  auto reply = Beat("node-0", {running});
  EXPECT_TRUE(controller_->ListNodes()[0]["schedulable"].get<bool>());
  EXPECT_EQ(Job("one")["phase"], "Succeeded");

  running.seq = 40;  // the task runs again after its recorded end: a stray
  reply = Beat("node-0", {running});
  ASSERT_EQ(reply.stop.size(), 1u);
  EXPECT_FALSE(controller_->ListNodes()[0]["schedulable"].get<bool>());
}

TEST_F(ControllerTest, CancelEndsPendingAtOnceAndStopsRunning) {
  Register("node-0");
  Submit(Gang("run", 1, 4));
  Submit(Gang("queued", 1, 4));
  ASSERT_EQ(controller_->RunSchedulingCycle(), 1);
  auto l = Beat("node-0").run.at(0);
  Beat("node-0", {Running(l.task_id, 5)});
  EXPECT_EQ((*controller_->Cancel("default", "queued"))["phase"], "Cancelled");
  EXPECT_EQ((*controller_->Cancel("default", "run"))["phase"], "Cancelling");
  auto reply = Beat("node-0", {Running(l.task_id, 5)});
  ASSERT_EQ(reply.stop.size(), 1u);
  Beat("node-0", {Exited(l.task_id, 143, ReportedState::kStopped)});
  EXPECT_EQ(Job("run")["phase"], "Cancelled");
  EXPECT_FALSE(controller_->Purge("default", "nope").has_value());
  EXPECT_TRUE(controller_->Purge("default", "run").has_value());
  EXPECT_FALSE(controller_->GetJob("default", "run").has_value());
  Submit(Gang("run", 1, 4));  // the name is free again
}

// Held jobs are Pending with reason Held and never bound; a release lets them be scheduled in
// the next cycle; both the hold and the release survive a controller restart (SQLite).
TEST_F(ControllerTest, HeldJobsWaitForTheirReleaseAcrossRestarts) {
  Register("node-0");
  auto held = controller_->Submit(Gang("held-a", 1, 1), /*hold=*/true);
  ASSERT_TRUE(held.has_value());
  EXPECT_EQ((*held)["phase"], "Pending");
  EXPECT_EQ((*held)["reason"], "Held");
  ASSERT_TRUE(controller_->Submit(Gang("held-b", 1, 1), true).has_value());
  ASSERT_TRUE(controller_->Submit(Gang("other-q", 1, 1), true).has_value());
  Submit(Gang("free", 1, 1));
  EXPECT_EQ(controller_->RunSchedulingCycle(), 1) << "only the job not held";
  EXPECT_EQ(Job("free")["phase"], "Running");
  EXPECT_FALSE(Job("free").contains("reason"));

  Open();  // the hold is durable
  EXPECT_EQ(Job("held-a")["reason"], "Held");
  EXPECT_EQ(controller_->RunSchedulingCycle(), 0);

  // Unknown names fail the whole request: nothing is released.
  auto bad = controller_->Release("", {"held-a", "nope"}, false);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().error.code, Error::Code::kNotFound);
  EXPECT_NE(bad.error().error.message.find("nope"), std::string::npos);
  EXPECT_EQ(Job("held-a")["reason"], "Held");
  EXPECT_FALSE(controller_->Release("", {}, false).has_value()) << "neither names nor all";
  EXPECT_FALSE(controller_->Release("", {"held-a"}, true).has_value()) << "both";

  auto out = controller_->Release("", {"held-a", "free"}, false);
  ASSERT_TRUE(out.has_value()) << out.error().error.message;
  EXPECT_EQ((*out)["released"], Json::array({"default/held-a"}));
  EXPECT_EQ((*out)["notHeld"], Json::array({"default/free"}));
  Open();  // the release is durable
  EXPECT_FALSE(Job("held-a").contains("reason"));
  EXPECT_EQ(Job("held-b")["reason"], "Held");
  EXPECT_EQ(controller_->RunSchedulingCycle(), 1);
  EXPECT_EQ(Job("held-a")["phase"], "Running");

  out = controller_->Release("", {}, true);  // every held job
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ((*out)["released"], Json::array({"default/held-b", "default/other-q"}));
  EXPECT_EQ(controller_->RunSchedulingCycle(), 2);
  const Json released = Job("held-b");
  bool event = false;
  for (const auto& e : released["events"]) event |= e["type"] == "JobReleased";
  EXPECT_TRUE(event) << released.dump(1);
  // A held job can be cancelled like any pending one.
  ASSERT_TRUE(controller_->Submit(Gang("dropped", 1, 1), true).has_value());
  EXPECT_EQ((*controller_->Cancel("default", "dropped"))["phase"], "Cancelled");
  EXPECT_FALSE(Job("dropped").contains("reason"));
}

TEST_F(ControllerTest, AWaitingJobWithoutGpusSaysWhatItNeedsInstead) {
  Register("node-0", 1);  // 64 CPUs
  Submit(
      "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: cpu-only}\n"
      "spec: {tasks: 2, gpusPerTask: 0, cpu: 40, command: [python3, prep.py]}\n");
  ASSERT_EQ(controller_->RunSchedulingCycle(), 1) << "one 40-CPU task fits on 64 CPUs";
  const std::string message = Job("cpu-only").value("message", "");
  EXPECT_NE(message.find("needs no GPU but 40 CPU"), std::string::npos) << message;
  EXPECT_EQ(message.find("0 free"), std::string::npos) << message;
}

TEST_F(ControllerTest, BatchTasksAreScheduledOneByOne) {
  Register("node-0", 2);
  Submit(
      "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: b}\n"
      "spec: {tasks: 5, gpusPerTask: \"0.5\", command: [python3, eval.py]}\n");
  ASSERT_EQ(controller_->RunSchedulingCycle(), 4) << "4 halves fit on 2 GPUs";
  Json job = Job("b");
  EXPECT_EQ(job["phase"], "Running");
  EXPECT_NE(job.value("message", "").find("waiting for capacity"), std::string::npos) << job.dump();
  std::set<int> ranks;
  for (const auto& t : job["taskList"]) ranks.insert(t["rank"].get<int>());
  EXPECT_EQ(ranks, (std::set<int>{0, 1, 2, 3}));
  auto reply = Beat("node-0");
  ASSERT_EQ(reply.run.size(), 4u);
  Beat("node-0", {Exited(reply.run[0].task_id, 0)});
  EXPECT_EQ(controller_->RunSchedulingCycle(), 1);
}

// A cycle with decisions records its clock and seed with them, in the same commit; a cycle
// with none records nothing.
TEST_F(ControllerTest, EachCycleWithDecisionsRecordsItsClockAndSeed) {
  Register("node-0", 2);
  Submit(Gang("fits", 1, 2));
  Submit(Gang("waits", 1, 2));
  ASSERT_EQ(controller_->RunSchedulingCycle(), 1);
  now_ += 1000;
  ASSERT_EQ(controller_->RunSchedulingCycle(), 0) << "nothing fits: no decision";
  auto events = controller_->Events(0, 0, 1000);
  ASSERT_TRUE(events);
  std::vector<Json> cycles;
  std::int64_t scheduled_seq = 0;
  for (const auto& e : (*events)["events"]) {
    if (e["type"] == "SchedulingCycle") cycles.push_back(e);
    if (e["type"] == "JobScheduled") scheduled_seq = e["seq"].get<std::int64_t>();
  }
  ASSERT_EQ(cycles.size(), 1u) << events->dump(2);
  EXPECT_EQ(cycles[0]["object"], "cycle/1");
  EXPECT_EQ(cycles[0]["timeMs"], 1'000'000) << "the clock the scheduler ran with";
  const Json record = Json::parse(cycles[0]["message"].get<std::string>());
  EXPECT_EQ(record["clock"], 1'000'000);
  EXPECT_EQ(record["seed"], 0) << "the run seed (tesserad --seed)";
  EXPECT_EQ(record["cycle"], 1);
  EXPECT_EQ(record["bound"], 1);
  EXPECT_EQ(record["unschedulable"], 0);
  EXPECT_EQ(record["binds"], Json::parse(R"([{"job": "default/fits", "unit": 0, "attempt": 1,
                             "on": ["node-0:0,1"]}])"));
  EXPECT_EQ(record["truncated"], false);
  EXPECT_EQ(cycles[0]["seq"].get<std::int64_t>(), scheduled_seq + 1) << "committed with its bind";
}

// A queue tree that does not fit the registered GPUs is reported by status and health, not
// skipped in silence; it clears once enough GPUs have registered.
TEST_F(ControllerTest, AQueueTreeThatDoesNotFitIsReported) {
  QueueSpec team;
  team.name = "team";
  team.guaranteed.gpu = {true, false, 4};  // 4 GPUs outright
  ControllerOptions options;
  options.now = [this] { return now_.load(); };
  options.scheduler.queue_policy = "drf";
  options.queues = QueueTreeSpec{{team}, 0, ""};
  options.queues_source = "q.yaml";
  controller_.reset();
  auto c = Controller::Create(store_.get(), options);
  ASSERT_TRUE(c) << c.error().message;
  controller_ = std::move(*c);
  EXPECT_FALSE(controller_->Health().contains("schedulerError"));
  Register("node-0", 2);
  Submit(
      "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: b, queue: team}\n"
      "spec: {tasks: 1, gpusPerTask: 1, command: [true]}\n");
  EXPECT_EQ(controller_->RunSchedulingCycle(), 0);
  const std::string error = controller_->Health().value("schedulerError", "");
  EXPECT_NE(error.find("queue tree q.yaml does not fit the 2 registered GPUs"), std::string::npos)
      << error;
  EXPECT_EQ(controller_->ServerStatus().value("schedulerError", ""), error);
  Register("node-1", 2);
  EXPECT_EQ(controller_->RunSchedulingCycle(), 1);
  EXPECT_FALSE(controller_->Health().contains("schedulerError"));
}

// Topology live: nodes register their leaf and spine; a gang that requires one leaf is placed
// exactly where the same Scheduler places it on the same cluster built as the simulator builds
// one (node names, levels, domains), and nodes outside the controller's levels are refused.
TEST_F(ControllerTest, TopologyRequireAndRankOrderMatchTheSchedulerOnTheSameCluster) {
  controller_.reset();
  ControllerOptions options;
  options.now = [this] { return now_.load(); };
  options.topology_levels = {"spine", "leaf"};
  auto c = Controller::Create(store_.get(), options);
  ASSERT_TRUE(c) << c.error().message;
  controller_ = std::move(*c);
  const std::vector<std::pair<std::string, std::string>> place = {
      {"node-0", "l0"}, {"node-1", "l0"}, {"node-2", "l1"}, {"node-3", "l1"}};
  for (const auto& [node, leaf] : place) {
    NodeRegistration reg;
    reg.node = node;
    reg.simulated = true;
    reg.cpu_milli = 64000;
    reg.memory_mib = 512 * 1024;
    for (int i = 0; i < 2; ++i) reg.gpus.push_back({i, "H100", "simulated H100", "SIM", 81920});
    reg.topology = {{"spine", "s0"}, {"leaf", leaf}};
    ASSERT_TRUE(controller_->Register(reg)) << node;
  }
  NodeRegistration stray;
  stray.node = "node-9";
  stray.topology = {{"rack", "r1"}};
  auto refused = controller_->Register(stray);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().error.message.find("topology: level \"rack\" is not one of"),
            std::string::npos)
      << refused.error().error.message;
  stray.topology = {{"spine", "s0"}};
  refused = controller_->Register(stray);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().error.message.find("level \"leaf\" missing"), std::string::npos);

  // One GPU of node-0 taken: leaf l0 has 3 free, l1 4; a 2 x 2 gang that requires a leaf fits
  // only in l1 (without topology, bestfit would take node-1 and one of l1's nodes).
  Submit(Gang("one", 1, 1));
  ASSERT_EQ(controller_->RunSchedulingCycle(), 1);
  auto gang = controller_->Submit(
      "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: leafy}\n"
      "spec: {workers: 2, gpusPerWorker: 2, topology: {require: leaf}, command: [true]}\n");
  ASSERT_TRUE(gang) << gang.error().error.message;
  controller_->RunSchedulingCycle();
  std::vector<std::string> live;
  const Json leafy = Job("leafy");
  for (const auto& t : leafy["taskList"]) live.push_back(t["node"]);
  ASSERT_EQ(live.size(), 2u) << leafy.dump(2);

  // The same cluster and the same first bind, scheduled directly.
  Cluster cluster;
  Topology topology{{"spine", "leaf"}, {{"s0"}, {"l0", "l1"}}};
  for (const auto& [node, leaf] : place)
    ASSERT_TRUE(cluster.AddNode(node, "H100", 2, 64000, 512 * 1024, {0, leaf == "l0" ? 0u : 1u}));
  cluster.set_topology(topology);
  ClusterState state(cluster);
  const Json one = Job("one")["taskList"][0];
  TaskPlacement taken;
  taken.node = NodeId(static_cast<std::uint32_t>(one["node"].get<std::string>().back() - '0'));
  taken.gpu_mask = static_cast<std::uint16_t>(1u << one["gpus"][0].get<int>());
  taken.gpu_milli = 1000;
  ASSERT_TRUE(state.Apply({taken}));
  auto spec = ParseJobSpec(
      "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: leafy}\n"
      "spec: {workers: 2, gpusPerWorker: 2, topology: {require: leaf}, command: [true]}\n");
  ASSERT_TRUE(spec);
  Workload w = spec->ToWorkload();
  w.id = JobId(1);
  ResolveGpuModels(cluster.models(), w);
  Snapshot snap;
  snap.jobs.push_back(JobView{&w, JobPhase::kPending, {}, 0, 0, 0, 0});
  auto scheduler = Scheduler::Create({});
  ASSERT_TRUE(scheduler);
  const Decisions d = scheduler->Schedule(snap, state);
  ASSERT_EQ(d.size(), 1u);
  std::vector<std::string> direct;
  for (const auto& tp : d[0].placement) direct.push_back(cluster.node(tp.node).name);
  EXPECT_EQ(live, direct);
  EXPECT_EQ(live, (std::vector<std::string>{"node-2", "node-3"}));
  const Json nodes = controller_->ListNodes();
  EXPECT_EQ(nodes[2]["topology"], (Json{{"leaf", "l1"}, {"spine", "s0"}}));
}

// Random submissions, cancels, exits and node losses; after every step no GPU holds more than
// 1000 milli of live tasks, and every commit the controller attempted went through.
TEST_F(ControllerTest, NoGpuIsEverBoundTwiceUnderRandomOperations) {
  for (int n = 0; n < 4; ++n) Register("node-" + std::to_string(n));
  std::mt19937 rng(7);
  int submitted = 0;
  for (int step = 0; step < 400; ++step) {
    const int op = static_cast<int>(rng() % 6);
    if (op == 0) {
      const int gpus = static_cast<int>(rng() % 5);
      Submit(Gang("j" + std::to_string(submitted++), 1 + static_cast<int>(rng() % 3), gpus, 1));
    } else if (op == 1) {
      controller_->RunSchedulingCycle();
    } else if (op == 2 && submitted > 0) {
      controller_->Cancel("default", "j" + std::to_string(rng() % submitted));
    } else if (op == 3) {
      // Every agent reports its tasks running, and some of them done.
      for (int n = 0; n < 4; ++n) {
        const std::string node = "node-" + std::to_string(n);
        auto reply = Beat(node);
        std::vector<TaskReport> reports;
        for (const auto& l : reply.run) {
          reports.push_back(rng() % 3 == 0 ? Exited(l.task_id, static_cast<int>(rng() % 2))
                                           : Running(l.task_id, 1));
        }
        for (const auto& s : reply.stop)
          reports.push_back(Exited(s.task_id, 143, ReportedState::kStopped));
        Beat(node, reports);
      }
    } else if (op == 4) {
      now_ += 4'000;
      for (int n = 0; n < 4; ++n) {
        if (rng() % 4 != 0) Beat("node-" + std::to_string(n));
      }
      controller_->CheckLiveness();
    } else {
      now_ += 100;
    }
    auto contents = store_->Load();
    ASSERT_TRUE(contents.has_value());
    std::map<std::pair<std::string, int>, int> milli;
    for (const auto& t : contents->tasks) {
      if (!IsLive(t.state)) continue;
      for (int g : t.gpus) {
        const int held = milli[std::make_pair(t.node, g)] += t.gpu_milli;
        ASSERT_LE(held, 1000) << "step " << step << ": " << t.node << " GPU " << g;
      }
    }
  }
  EXPECT_GT(submitted, 30);
}

// Concurrent submitters share commits (the group commit), and each still gets its own answer:
// one of eight submitting the same name wins and the others hear AlreadyExists, a job that can
// never fit is refused with its reason, and every acknowledged job is stored once.
TEST_F(ControllerTest, ConcurrentSubmissionsShareCommitsAndEachGetsItsOwnAnswer) {
  Register("node-0", 4);
  auto commits = [&] {
    const std::string text = controller_->MetricsText();
    const std::string key = "tessera_store_commit_duration_seconds_count ";
    const auto at = text.find(key);
    return at == std::string::npos ? -1.0 : std::stod(text.substr(at + key.size()));
  };
  const double commits_before = commits();
  constexpr int kThreads = 8, kEach = 6;
  std::atomic<int> accepted{0}, duplicates{0}, never_fit{0}, other{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < kEach; ++k) {
        std::string spec = Gang("c" + std::to_string(t) + "-" + std::to_string(k), 1, 1);
        if (k == 2) spec = Gang("same", 1, 1);
        if (k == 4) spec = Gang("huge-" + std::to_string(t), 1, 8);
        auto r = controller_->Submit(spec, /*hold=*/true);
        if (r) {
          ++accepted;
        } else if (r.error().error.code == Error::Code::kAlreadyExists) {
          ++duplicates;
        } else if (r.error().error.message.find("can never run") != std::string::npos) {
          ++never_fit;
        } else {
          ++other;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(accepted, kThreads * (kEach - 2) + 1);
  EXPECT_EQ(duplicates, kThreads - 1);
  EXPECT_EQ(never_fit, kThreads);
  EXPECT_EQ(other, 0);
  JobFilter all;
  EXPECT_EQ(controller_->ListJobs(all).jobs.size(), static_cast<std::size_t>(accepted));
  auto contents = store_->Load();
  ASSERT_TRUE(contents.has_value());
  EXPECT_EQ(contents->jobs.size(), static_cast<std::size_t>(accepted));
  // Never more commits than jobs; with eight submitters at once, fewer.
  EXPECT_LT(commits() - commits_before, accepted) << "no commit was shared";
}

// A listing paged with limit and continue, as kube-apiserver's: every job once, in order, in
// either direction and with a phase filter, and the last page says it is the last.
TEST_F(ControllerTest, JobListingsPageWithContinue) {
  Register("node-0", 2);
  for (int i = 0; i < 7; ++i) Submit(Gang("job-" + std::to_string(i), 1, 1));
  ASSERT_EQ(controller_->RunSchedulingCycle(), 2);  // job-0 and job-1 run, the rest wait
  auto walk = [&](JobFilter f) {
    std::vector<std::string> names;
    for (int page = 0; page < 10; ++page) {
      JobPage p = controller_->ListJobs(f);
      EXPECT_LE(p.jobs.size(), f.limit);
      for (const auto& j : p.jobs) names.push_back(j["name"].get<std::string>());
      if (p.next_continue == 0) return names;
      f.continue_after = p.next_continue;
    }
    ADD_FAILURE() << "the pages did not end";
    return names;
  };
  JobFilter all;
  all.limit = 3;
  EXPECT_EQ(walk(all), (std::vector<std::string>{"job-0", "job-1", "job-2", "job-3", "job-4",
                                                 "job-5", "job-6"}));
  all.newest_first = true;
  EXPECT_EQ(walk(all), (std::vector<std::string>{"job-6", "job-5", "job-4", "job-3", "job-2",
                                                 "job-1", "job-0"}));
  JobFilter pending;
  pending.limit = 2;
  pending.phase = api::JobPhase::kPending;
  EXPECT_EQ(walk(pending), (std::vector<std::string>{"job-2", "job-3", "job-4", "job-5", "job-6"}));
  JobFilter running;
  running.limit = 1;
  running.phase = api::JobPhase::kRunning;
  EXPECT_EQ(walk(running), (std::vector<std::string>{"job-0", "job-1"}));
}

// The job index (job_index.h) against a pass over every job: each phase's listing holds exactly
// the jobs of that phase, /v1/status counts them, and /v1/queues' pending, active and finished
// jobs and allocated GPUs match the jobs' summaries and the nodes'. After random submissions,
// cancels, purges, exits and lost nodes, and after a restart (the index rebuilt on load).
TEST_F(ControllerTest, TheJobIndexAgreesWithAPassOverEveryJob) {
  auto check = [&](int step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const Json all = controller_->ListJobs({}).jobs;
    std::map<std::string, std::vector<std::string>> by_phase;
    std::map<std::string, std::map<std::string, int>> by_queue;  // queue -> figure -> count
    for (const auto& j : all) {
      const auto phase = j["phase"].get<std::string>();
      by_phase[phase].push_back(j["name"].get<std::string>());
      const bool finished = j["finishTimeMs"].get<Tick>() != 0;
      ++by_queue[j["queue"].get<std::string>()][finished             ? "finishedJobs"
                                                : phase == "Pending" ? "pendingJobs"
                                                                     : "activeJobs"];
    }
    const Json status = controller_->ServerStatus();
    EXPECT_EQ(status["jobs"].size(), by_phase.size()) << status.dump();
    for (const auto& [phase, names] : by_phase) {
      EXPECT_EQ(status["jobs"].value(phase, 0), std::ssize(names)) << phase;
      JobFilter f;
      f.phase = api::ParseJobPhase(phase);
      std::vector<std::string> listed;
      for (const auto& j : controller_->ListJobs(f).jobs)
        listed.push_back(j["name"].get<std::string>());
      EXPECT_EQ(listed, names) << phase;
    }
    double queue_gpus = 0, node_gpus = 0;
    for (const auto& row : controller_->ListQueues()) {
      for (const char* figure : {"pendingJobs", "activeJobs", "finishedJobs"})
        EXPECT_EQ(row[figure].get<int>(), by_queue[row["name"].get<std::string>()][figure])
            << row.dump();
      queue_gpus += row["gpusAllocated"].get<double>();
    }
    for (const auto& n : controller_->ListNodes()) node_gpus += n["gpusAllocated"].get<double>();
    EXPECT_EQ(queue_gpus, node_gpus);
  };
  for (int n = 0; n < 3; ++n) Register("node-" + std::to_string(n));
  std::mt19937 rng(11);
  int submitted = 0;
  for (int step = 0; step < 120; ++step) {
    const int op = static_cast<int>(rng() % 6);
    const std::string some = "j" + std::to_string(submitted > 0 ? rng() % submitted : 0);
    if (op == 0) {
      const std::string q = rng() % 2 == 0 ? "default" : "team-b";
      Submit("apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: j" +
             std::to_string(submitted++) + ", queue: " + q +
             "}\nspec: {workers: " + std::to_string(1 + rng() % 2) +
             ", gpusPerWorker: " + std::to_string(1 + rng() % 3) + ", command: [run]}\n");
    } else if (op == 1) {
      controller_->RunSchedulingCycle();
    } else if (op == 2) {
      for (const char* q : {"default", "team-b"}) {
        (void)controller_->Cancel(q, some);
        (void)controller_->Purge(q, some);
      }
    } else if (op == 3) {
      for (int n = 0; n < 3; ++n) {
        const std::string node = "node-" + std::to_string(n);
        std::vector<TaskReport> reports;
        for (const auto& l : Beat(node).run)
          reports.push_back(rng() % 2 == 0 ? Exited(l.task_id, 0) : Running(l.task_id, 1));
        Beat(node, reports);
      }
    } else if (op == 4) {
      now_ += 11'000;
      for (int n = 0; n < 2; ++n) Beat("node-" + std::to_string(n));
      controller_->CheckLiveness();
      Register("node-2");
    } else if (step > 60 && step % 30 == 0) {
      Open();  // the index rebuilt from the store
    }
    check(step);
  }
  EXPECT_GT(submitted, 10);
}

}  // namespace
}  // namespace tessera
