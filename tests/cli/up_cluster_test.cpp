// `tessera up --cluster FILE` in process: the simulator's cluster file becomes the emulated nodes'
// names, GPUs and places; a gang that requires a leaf lands on the same nodes live (a Controller
// fed the file's nodes as the agent registers them) and in the simulator's scheduler on the
// cluster the simulator loads from the same file; a file that contradicts the cluster a state
// holds, a spare pool that fills a leaf, and malformed topology files are refused naming the
// field.
#include "cli/up_cluster.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <map>

#include "agent/agent.h"
#include "agent/gpu_inventory.h"
#include "sched/scheduler.h"
#include "server/controller.h"
#include "sim/cluster_spec.h"
#include "sim/export_comparison.h"
#include "sim/live_export.h"
#include "spec/job_spec.h"
#include "store/sqlite_store.h"

namespace tessera::cli {
namespace {

using Json = nlohmann::json;

const char* kTwoLeaf = "examples/config/clusters/two-leaf.yaml";  // 2 leaves x 4 nodes x 8 A100
const char* kOne =
    "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: one}\n"
    "spec: {workers: 1, gpusPerWorker: 1, command: [true]}\n";
const char* kLeafy =
    "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: leafy}\n"
    "spec: {workers: 4, gpusPerWorker: 8, topology: {require: leaf}, command: [true]}\n";

// Registers the plan's nodes as the emulating agent does.
void RegisterPlanNodes(Controller& controller, const ClusterUpPlan& plan) {
  for (const auto& n : plan.nodes.nodes) {
    auto gpus = SimulatedGpus(n.gpus, n.name);
    ASSERT_TRUE(gpus);
    NodeRegistration reg;
    reg.node = n.name;
    reg.simulated = true;
    reg.gpus = gpus->gpus;
    reg.cpu_milli = 64000;
    reg.memory_mib = 512 * 1024;
    reg.topology = n.topology;
    ASSERT_TRUE(controller.Register(reg)) << n.name;
  }
}

// The agent's reports of a task that ran and exited.
void EndTask(Controller& controller, const Json& task) {
  for (ReportedState state : {ReportedState::kRunning, ReportedState::kExited}) {
    HeartbeatRequest beat;
    TaskReport report;
    report.task_id = task["id"].get<std::int64_t>();
    report.state = state;
    report.pid = 100;
    beat.tasks.push_back(report);
    ASSERT_TRUE(controller.Heartbeat(task["node"].get<std::string>(), beat, 0));
  }
}

TEST(UpClusterTest, PlanGivesTheFilesNamesGpusAndPlaces) {
  auto plan = PlanClusterUp(kTwoLeaf, 0);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(JoinLevels(plan->levels), "spine,leaf");
  ASSERT_EQ(plan->nodes.nodes.size(), 8u);
  const TopologyFileNode& n5 = plan->nodes.nodes[5];
  EXPECT_EQ(n5.name, "a100-0005");
  EXPECT_EQ(n5.gpus, "8xA100");
  EXPECT_EQ(n5.topology,
            (std::map<std::string, std::string>{{"leaf", "leaf-1"}, {"spine", "spine-0"}}));
  EXPECT_EQ(plan->summary, "8 nodes (8 x 8 A100, simulated GPUs)");
  // What `up` writes for the agent reads back the same.
  auto back = ParseTopologyFile(TopologyFileText(plan->nodes), "f");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->nodes[5].topology, n5.topology);
  AgentOptions o;
  o.node = "cluster";
  o.simulate_nodes = 8;
  ASSERT_TRUE(ApplyTopologyFile(*back, o));
  ASSERT_EQ(o.emulated.size(), 8u);
  EXPECT_EQ(o.emulated[5].name, "a100-0005");
  o.simulate_nodes = 7;
  o.emulated.clear();
  EXPECT_EQ(ApplyTopologyFile(*back, o).error().message,
            "--simulate-nodes 7, but the file lists 8 nodes");
}

TEST(UpClusterTest, SameGangOnTheSameNodesLiveAndInTheSimulator) {
  auto plan = PlanClusterUp(kTwoLeaf, 0);
  ASSERT_TRUE(plan) << plan.error().message;
  char tmpl[] = "/tmp/tessera-up-cluster-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  std::vector<std::string> live;
  Json one_task;
  {
    auto store = SqliteStore::Open(dir + "/state.db");
    ASSERT_TRUE(store);
    ControllerOptions options;
    options.topology_levels = plan->levels;
    auto controller = Controller::Create(store->get(), options);
    ASSERT_TRUE(controller) << controller.error().message;
    RegisterPlanNodes(**controller, *plan);
    ASSERT_TRUE((*controller)->Submit(kOne));
    ASSERT_EQ((*controller)->RunSchedulingCycle(), 1);
    ASSERT_TRUE((*controller)->Submit(kLeafy));
    ASSERT_EQ((*controller)->RunSchedulingCycle(), 1);
    one_task = (*(*controller)->GetJob("default", "one"))["taskList"][0];
    const Json leafy = *(*controller)->GetJob("default", "leafy");
    for (const auto& t : leafy["taskList"]) live.push_back(t["node"]);
  }
  std::filesystem::remove_all(dir);

  // The simulator's cluster from the same file, the same first bind, the same scheduler.
  auto cluster = LoadCluster(kTwoLeaf);
  ASSERT_TRUE(cluster);
  ClusterState state(*cluster);
  TaskPlacement taken;
  for (const Node& n : cluster->nodes()) {
    if (n.name == one_task["node"]) taken.node = n.id;
  }
  taken.gpu_mask = static_cast<std::uint16_t>(1u << one_task["gpus"][0].get<int>());
  taken.gpu_milli = 1000;
  ASSERT_TRUE(state.Apply({taken}));
  auto spec = ParseJobSpec(kLeafy);
  ASSERT_TRUE(spec);
  Workload w = spec->ToWorkload();
  w.id = JobId(1);
  ResolveGpuModels(cluster->models(), w);
  Snapshot snap;
  snap.jobs.push_back(JobView{&w, JobPhase::kPending, {}, 0, 0, 0, 0});
  auto scheduler = Scheduler::Create({});
  ASSERT_TRUE(scheduler);
  const Decisions d = scheduler->Schedule(snap, state);
  ASSERT_EQ(d.size(), 1u);
  std::vector<std::string> simulated;
  for (const auto& tp : d[0].placement) simulated.push_back(cluster->node(tp.node).name);
  EXPECT_EQ(live, simulated);
  ASSERT_EQ(live.size(), 4u);
  // The leaf without the one-GPU job: the gang needs 4 whole nodes of one leaf.
  const auto leaf_of = [](const std::string& name) { return std::stoi(name.substr(5)) / 4; };
  for (const auto& n : live) EXPECT_NE(leaf_of(n), leaf_of(one_task["node"]));
}

// A live run on the two-leaf cluster (fake clock, seed 7: the ties among empty nodes are drawn),
// exported (GET /v1/export) and replayed on the simulator's clock: every unit is bound in the
// same cycle on the same nodes and GPUs as live.
TEST(UpClusterTest, ALiveRunExportedAndReplayedBindsEveryUnitOnTheSameNodes) {
  auto plan = PlanClusterUp(kTwoLeaf, 0);
  ASSERT_TRUE(plan) << plan.error().message;
  char tmpl[] = "/tmp/tessera-up-export-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  std::atomic<Tick> now{1'000'000};
  Json exported;
  {
    auto store = SqliteStore::Open(dir + "/state.db");
    ASSERT_TRUE(store);
    ControllerOptions options;
    options.topology_levels = plan->levels;
    options.now = [&now] { return now.load(); };
    options.scheduler.placement.draw_seed = 7;
    auto c = Controller::Create(store->get(), options);
    ASSERT_TRUE(c) << c.error().message;
    Controller& controller = **c;
    RegisterPlanNodes(controller, *plan);
    auto submit = [&](const std::string& spec) {
      auto r = controller.Submit(spec);
      ASSERT_TRUE(r) << r.error().error.message;
    };
    submit(kOne);
    ASSERT_EQ(controller.RunSchedulingCycle(), 1);
    now += 1000;
    submit(kLeafy);
    ASSERT_EQ(controller.RunSchedulingCycle(), 1);
    now += 1000;
    submit(
        "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: pair}\n"
        "spec: {workers: 2, gpusPerWorker: 4, command: [true]}\n");
    submit(
        "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: shards}\n"
        "spec: {tasks: 3, gpusPerTask: 2, command: [true]}\n");
    ASSERT_EQ(controller.RunSchedulingCycle(), 4);
    now += 1000;
    // "one" ends: its GPU is free for the next cycle, live and in the replay.
    EndTask(controller, (*controller.GetJob("default", "one"))["taskList"][0]);
    submit(
        "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: late}\n"
        "spec: {workers: 1, gpusPerWorker: 8, command: [true]}\n");
    ASSERT_EQ(controller.RunSchedulingCycle(), 1)
        << (*controller.GetJob("default", "fill")).dump(1).substr(0, 3000)
        << (*controller.GetJob("default", "urgent")).dump(1);
    now += 500;
    auto out = controller.Export();
    ASSERT_TRUE(out) << out.error().error.message;
    exported = std::move(*out);
  }
  std::filesystem::remove_all(dir);

  auto live = ReadLiveExport(exported);
  ASSERT_TRUE(live) << live.error().message;
  EXPECT_EQ(live->options.seed, 7u);
  EXPECT_EQ(live->options.cycles.size(), 4u);
  ASSERT_EQ(live->jobs.size(), 7u) << "one, leafy, pair, 3 tasks of shards, late";
  EXPECT_EQ(live->names[3], "default/shards#0");
  EXPECT_EQ(live->jobs[0].duration, 3000) << "one held its GPU from its bind to its exit";
  auto replay = RunReplay(live->cluster, live->jobs, live->options);
  ASSERT_TRUE(replay) << replay.error().message;
  const ExportComparison c = CompareWithLive(*live, *replay);
  EXPECT_EQ(c.binds.live, 7);
  EXPECT_EQ(c.binds.simulated, 7);
  EXPECT_EQ(c.binds.agree, 7) << ExportComparisonJson(*live, c).dump(2);
  EXPECT_EQ(c.decisions_agree(), c.decisions_live());
  for (const UnitComparison& u : c.units) {
    EXPECT_TRUE(u.agree) << live->names[u.unit];
    EXPECT_EQ(u.simulated_bound, u.live_bound) << live->names[u.unit];
    EXPECT_FALSE(u.live_nodes.empty()) << live->names[u.unit];
  }
  EXPECT_EQ(c.units[1].live_nodes.size(), 4u) << "the gang's 4 ranks";
  // A damaged export is refused naming the field.
  Json no_spec = exported;
  no_spec["jobs"][1].erase("spec");
  EXPECT_EQ(ReadLiveExport(no_spec).error().message,
            "jobs[1].spec: missing (an export has every job's full spec)");
  Json bad_node = exported;
  bad_node["nodes"][2]["gpuCount"] = "eight";
  EXPECT_EQ(ReadLiveExport(bad_node).error().message, "nodes[2].gpuCount: of the wrong type");
  Json bad_record = exported;
  for (Json& e : bad_record["events"]) {
    if (e["type"] == "SchedulingCycle") e["message"] = R"({"clock": 1, "seed": 0})";
  }
  EXPECT_NE(ReadLiveExport(bad_record).error().message.find(".message.cycle: missing"),
            std::string::npos);
}

// With priority preemption: a job of priority 10 on a full cluster preempts a victim, live
// and in the replay the same one for the same job, and starts on its GPUs (live once the
// victim has exited, a cycle later; in the simulator at once).
TEST(UpClusterTest, APreemptionReplaysWithTheSameVictimAndNodes) {
  auto plan = PlanClusterUp(kTwoLeaf, 0);
  ASSERT_TRUE(plan) << plan.error().message;
  char tmpl[] = "/tmp/tessera-up-preempt-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  std::atomic<Tick> now{1'000'000};
  Json exported;
  {
    auto store = SqliteStore::Open(dir + "/state.db");
    ASSERT_TRUE(store);
    ControllerOptions options;
    options.topology_levels = plan->levels;
    options.now = [&now] { return now.load(); };
    options.scheduler.priority_preemption = true;
    auto c = Controller::Create(store->get(), options);
    ASSERT_TRUE(c) << c.error().message;
    Controller& controller = **c;
    RegisterPlanNodes(controller, *plan);
    for (const char* spec : {"apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: fill}\n"
                             "spec: {tasks: 7, gpusPerTask: 8, command: [true]}\n",
                             "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: low}\n"
                             "spec: {workers: 1, gpusPerWorker: 8, command: [true]}\n"}) {
      ASSERT_TRUE(controller.Submit(spec));
    }
    ASSERT_EQ(controller.RunSchedulingCycle(), 8);
    std::map<std::string, HeartbeatRequest> running;  // what each agent runs and reports
    for (const auto& n : plan->nodes.nodes) {
      auto reply = controller.Heartbeat(n.name, {}, 0);
      ASSERT_TRUE(reply);
      for (const auto& run : reply->run) {
        TaskReport report;
        report.task_id = run.task_id;
        report.state = ReportedState::kRunning;
        report.pid = 100;
        running[n.name].tasks.push_back(report);
      }
      ASSERT_TRUE(controller.Heartbeat(n.name, running[n.name], 0));
    }
    now += 1000;
    ASSERT_TRUE(
        controller.Submit("apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: urgent}\n"
                          "spec: {priority: 10, workers: 1, gpusPerWorker: 8, command: [true]}\n"));
    ASSERT_EQ(controller.RunSchedulingCycle(), 0) << "the victim is stopped first";
    now += 200;
    // The victim's agent is told to stop it, and reports it gone.
    int stopped = 0;
    for (const auto& n : plan->nodes.nodes) {
      auto reply = controller.Heartbeat(n.name, running[n.name], 0);
      ASSERT_TRUE(reply);
      for (const auto& stop : reply->stop) {
        EndTask(controller, {{"id", stop.task_id}, {"node", n.name}});
        ++stopped;
      }
    }
    ASSERT_EQ(stopped, 1);
    ASSERT_EQ(controller.RunSchedulingCycle(), 1);
    now += 500;
    auto out = controller.Export();
    ASSERT_TRUE(out) << out.error().error.message;
    exported = std::move(*out);
  }
  std::filesystem::remove_all(dir);

  auto live = ReadLiveExport(exported);
  ASSERT_TRUE(live) << live.error().message;
  auto replay = RunReplay(live->cluster, live->jobs, live->options);
  ASSERT_TRUE(replay) << replay.error().message;
  const ExportComparison c = CompareWithLive(*live, *replay);
  const std::string why = ExportComparisonJson(*live, c).dump(2);
  EXPECT_EQ(c.preemptions.live, 1) << why;
  EXPECT_EQ(c.preemptions.agree, 1) << why;
  EXPECT_EQ(c.binds.live, 9) << why;
  EXPECT_EQ(c.binds.agree, 9) << why;
  const UnitComparison& urgent = c.units.back();
  ASSERT_EQ(live->names[urgent.unit], "default/urgent");
  EXPECT_EQ(urgent.simulated_nodes, urgent.live_nodes);
  EXPECT_EQ(urgent.live_bound - urgent.simulated_bound, 200) << "live waited for the victim";
}

TEST(UpClusterTest, AFileThatContradictsTheClusterIsRefused) {
  auto plan = PlanClusterUp(kTwoLeaf, 0);
  ASSERT_TRUE(plan);
  const Json ok = Json::array({{{"name", "a100-0001"},
                                {"gpuModel", "A100"},
                                {"gpuCount", 8},
                                {"topology", {{"spine", "spine-0"}, {"leaf", "leaf-0"}}}}});
  EXPECT_TRUE(CheckClusterAgainstNodes(*plan, ok));
  Json other_gpus = ok;
  other_gpus[0]["gpuModel"] = "H100";
  EXPECT_EQ(CheckClusterAgainstNodes(*plan, other_gpus).error().message,
            std::string(kTwoLeaf) +
                ": node a100-0001: gpus: the cluster in this state has 8xH100, the file says "
                "8xA100 (use another --state, or the cluster's own file)");
  Json other_place = ok;
  other_place[0]["topology"]["leaf"] = "leaf-1";
  EXPECT_EQ(CheckClusterAgainstNodes(*plan, other_place).error().message,
            std::string(kTwoLeaf) +
                ": node a100-0001: topology: the cluster in this state has "
                "leaf=leaf-1,spine=spine-0, the file says leaf=leaf-0,spine=spine-0 (use another "
                "--state, or the cluster's own file)");
}

TEST(UpClusterTest, SparesThatFillALeafAndBadTopologyFilesAreRefused) {
  EXPECT_TRUE(PlanClusterUp(kTwoLeaf, 3));
  EXPECT_EQ(PlanClusterUp(kTwoLeaf, 4).error().message,
            "--spares-per-domain: 4 spare node(s) per leaf domain, but leaf leaf-0 has 4 "
            "node(s); at least one must be left to run work");
  EXPECT_EQ(ParseTopologyFile("nodes: [{name: a, topology: {leaf: 3}}]", "t.yaml").error().message,
            "t.yaml: nodes[0].topology.leaf: must be a non-empty string (the domain)");
  EXPECT_EQ(ParseTopologyFile("nodes: [{name: a}, {name: a}]", "t.yaml").error().message,
            "t.yaml: nodes[1].name: 'a' given twice");
  EXPECT_EQ(ParseTopologyFile("topology: {leaf: l1}\nrack: r1\n", "t.yaml").error().message,
            "t.yaml: rack: unknown field");
  auto single = ParseTopologyFile("topology: {leaf: l3, spine: s1}", "t.yaml");
  ASSERT_TRUE(single);
  AgentOptions o;
  o.node = "gpu-017";
  ASSERT_TRUE(ApplyTopologyFile(*single, o));
  EXPECT_EQ(o.topology, (std::map<std::string, std::string>{{"leaf", "l3"}, {"spine", "s1"}}));
}

}  // namespace
}  // namespace tessera::cli
