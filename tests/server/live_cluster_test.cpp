// ctest-labels: integration
// The live cluster on loopback: the real tesserad and tessera-agent binaries, real processes on
// simulated GPUs. Gangs start all-or-nothing with the right ranks and GPUs; failures carry
// exit codes; cancel stops every process; a kill -9 of the controller during a burst of 1,000
// submissions loses no acknowledged job, duplicates none, never binds a GPU twice and re-adopts
// running tasks; a killed agent's gang is recovered; bad specs are refused and the controller
// stays up.
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <set>
#include <thread>

#include "server/live_harness.h"
#include "store/sqlite_store.h"

namespace tessera::testing {
namespace {

using namespace std::chrono_literals;

// Parses "KEY=VALUE KEY=VALUE" from a log line starting with `marker`.
std::map<std::string, std::string> EnvLine(const std::string& log, const std::string& marker) {
  std::map<std::string, std::string> out;
  auto pos = log.find(marker);
  if (pos == std::string::npos) return out;
  std::istringstream line(
      log.substr(pos + marker.size(), log.find('\n', pos) - pos - marker.size()));
  std::string kv;
  while (line >> kv) {
    auto eq = kv.find('=');
    if (eq != std::string::npos) out[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return out;
}

std::string TaskLog(LiveCluster& c, const std::string& job, int rank) {
  return c.Get("/v1/logs/default/" + job + "?rank=" + std::to_string(rank)).body;
}

const char* kPrintEnv =
    "echo ENV RANK=$RANK WORLD_SIZE=$WORLD_SIZE LOCAL_RANK=$LOCAL_RANK "
    "LOCAL_WORLD_SIZE=$LOCAL_WORLD_SIZE NODE_RANK=$NODE_RANK MASTER_ADDR=$MASTER_ADDR "
    "MASTER_PORT=$MASTER_PORT CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES "
    "TESSERA_NODE=$TESSERA_NODE SIM=$TESSERA_SIMULATED_GPUS; exec sleep 30";

TEST(LiveClusterTest, GangStartsAllOrNothingWithRanksWorldSizeAndDistinctGpus) {
  Watchdog watchdog(90s, "gang test");
  LiveCluster c;
  ASSERT_TRUE(c.WaitForReadyNodes(2)) << c.Logs();

  ASSERT_EQ(c.Submit(TrainingSpec("gang", 2, 4, kPrintEnv)).status, 201);
  ASSERT_TRUE(c.WaitForPhase("default", "gang", "Running")) << c.Logs();
  // Both workers logged their environment.
  std::vector<std::map<std::string, std::string>> env(2);
  ASSERT_TRUE(WaitFor(
      [&] {
        for (int r = 0; r < 2; ++r)
          env[static_cast<std::size_t>(r)] = EnvLine(TaskLog(c, "gang", r), "ENV ");
        return !env[0].empty() && !env[1].empty();
      },
      20))
      << c.Logs();
  std::set<std::string> nodes;
  for (int r = 0; r < 2; ++r) {
    auto& e = env[static_cast<std::size_t>(r)];
    EXPECT_EQ(e["RANK"], std::to_string(r));
    EXPECT_EQ(e["NODE_RANK"], std::to_string(r));
    EXPECT_EQ(e["WORLD_SIZE"], "2");
    EXPECT_EQ(e["LOCAL_RANK"], "0");
    EXPECT_EQ(e["LOCAL_WORLD_SIZE"], "1");
    EXPECT_EQ(e["MASTER_ADDR"], "127.0.0.1");
    EXPECT_EQ(e["MASTER_PORT"], env[0]["MASTER_PORT"]);
    EXPECT_EQ(e["SIM"], "1");
    std::set<std::string> gpus;
    std::stringstream ss(e["CUDA_VISIBLE_DEVICES"]);
    for (std::string g; std::getline(ss, g, ',');) gpus.insert(g);
    EXPECT_EQ(gpus.size(), 4u) << e["CUDA_VISIBLE_DEVICES"];
    nodes.insert(e["TESSERA_NODE"]);
  }
  EXPECT_EQ(nodes.size(), 2u) << "each 4-GPU worker fills one node";
  const Json job = c.Job("default", "gang");
  for (const auto& t : job["taskList"]) {
    EXPECT_EQ(t["gpus"].size(), 4u);
    EXPECT_TRUE(t.value("simulatedGpus", false));
  }

  // A second gang cannot start while the first holds every GPU: it gets no task at all.
  ASSERT_EQ(c.Submit(TrainingSpec("second", 2, 4, "exec sleep 30")).status, 201);
  // One that can never fit is refused at submit with the reason (as sbatch refuses it)...
  const HttpResult refused = c.Submit(TrainingSpec("huge", 3, 8, "exec sleep 30"));
  ASSERT_EQ(refused.status, 409) << refused.body;
  EXPECT_EQ(refused.json["error"]["code"], "FailedPrecondition") << refused.body;
  EXPECT_EQ(refused.json["error"]["details"][0]["field"], "spec.gpusPerWorker") << refused.body;
  EXPECT_NE(refused.body.find("8 GPUs per worker, and the largest registered node has 4"),
            std::string::npos)
      << refused.body;
  EXPECT_EQ(c.Get("/v1/jobs/default/huge").status, 404) << "nothing stored";
  // ...and, queued anyway, says why it waits and does not block the queue.
  ASSERT_EQ(c.Post("/v1/jobs?queueAnyway=true", TrainingSpec("huge", 3, 8, "exec sleep 30")).status,
            201);
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(c.Job("default", "second")["taskList"].size(), 0u);
  EXPECT_EQ(c.Job("default", "second")["phase"], "Pending");
  EXPECT_NE(c.Job("default", "huge").value("message", "").find("unschedulable"), std::string::npos)
      << c.Job("default", "huge").dump();
  // Once the first gang is cancelled the second starts, whole.
  ASSERT_EQ(c.Delete("/v1/jobs/default/gang").status, 202);
  ASSERT_TRUE(c.WaitForPhase("default", "second", "Running", 20)) << c.Logs();
  EXPECT_EQ(c.Job("default", "second")["taskList"].size(), 2u);
}

TEST(LiveClusterTest, MultiProcessWorkersGetGlobalRanks) {
  Watchdog watchdog(60s, "multi-process test");
  LiveCluster c;
  ASSERT_TRUE(c.WaitForReadyNodes(2));
  ASSERT_EQ(c.Submit(TrainingSpec("mp", 2, 2,
                                  "echo ENV$LOCAL_RANK RANK=$RANK WORLD_SIZE=$WORLD_SIZE "
                                  "LOCAL_WORLD_SIZE=$LOCAL_WORLD_SIZE NODE_RANK=$NODE_RANK; "
                                  "exec sleep 20",
                                  "  processesPerWorker: 2\n"))
                .status,
            201);
  std::set<std::string> ranks;
  ASSERT_TRUE(WaitFor(
      [&] {
        ranks.clear();
        for (int w = 0; w < 2; ++w) {
          const std::string log = TaskLog(c, "mp", w);
          for (int l = 0; l < 2; ++l) {
            auto e = EnvLine(log, "ENV" + std::to_string(l) + " ");
            if (e.empty()) return false;
            EXPECT_EQ(e["WORLD_SIZE"], "4");
            EXPECT_EQ(e["LOCAL_WORLD_SIZE"], "2");
            EXPECT_EQ(e["NODE_RANK"], std::to_string(w));
            EXPECT_EQ(e["RANK"], std::to_string(w * 2 + l));
            ranks.insert(e["RANK"]);
          }
        }
        return true;
      },
      20))
      << c.Logs();
  EXPECT_EQ(ranks, (std::set<std::string>{"0", "1", "2", "3"}));
}

TEST(LiveClusterTest, AFailingTaskIsReportedWithItsExitCode) {
  Watchdog watchdog(60s, "failure test");
  LiveCluster c;
  ASSERT_TRUE(c.WaitForReadyNodes(2));
  ASSERT_EQ(
      c.Submit(TrainingSpec("fails", 2, 1,
                            "if [ \"$RANK\" = 1 ]; then sleep 0.5; exit 3; fi; exec sleep 30"))
          .status,
      201);
  ASSERT_TRUE(c.WaitForPhase("default", "fails", "Failed", 20)) << c.Logs();
  const Json job = c.Job("default", "fails");
  EXPECT_NE(job.value("message", "").find("rank 1 exited with code 3"), std::string::npos)
      << job.dump(2);
  for (const auto& t : job["taskList"]) {
    if (t["rank"] == 1) {
      EXPECT_EQ(t["state"], "Failed");
      EXPECT_EQ(t["exitCode"], 3);
    } else {
      EXPECT_EQ(t["state"], "Stopped") << "the rest of the gang is stopped";
    }
  }
  // A command that cannot be executed fails with 127 and says why.
  const std::string missing =
      "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: missing}\nspec:\n  tasks: 1\n"
      "  gpusPerTask: 0\n  maxRestarts: 0\n  command: [/nonexistent/tool, --flag]\n";
  ASSERT_EQ(c.Submit(missing).status, 201);
  ASSERT_TRUE(c.WaitForPhase("default", "missing", "Failed", 20)) << c.Logs();
  const Json t = c.Job("default", "missing")["taskList"][0];
  EXPECT_EQ(t["exitCode"], 127);
  EXPECT_NE(t.value("message", "").find("exec /nonexistent/tool: No such file or directory"),
            std::string::npos)
      << t.dump();
  // Restarts are bounded by maxRestarts: two attempts, then Failed.
  ASSERT_EQ(c.Submit(TrainingSpec("retry", 1, 1, "exit 5", "", 1)).status, 201);
  ASSERT_TRUE(c.WaitForPhase("default", "retry", "Failed", 30)) << c.Logs();
  const Json retry = c.Job("default", "retry");
  EXPECT_EQ(retry["attempt"], 2);
  EXPECT_EQ(retry["restarts"], 1);
}

TEST(LiveClusterTest, CancelStopsEveryProcessOfTheJob) {
  Watchdog watchdog(60s, "cancel test");
  LiveCluster c;
  ASSERT_TRUE(c.WaitForReadyNodes(2));
  // Two workers of two processes each; every process also starts a grandchild.
  ASSERT_EQ(c.Submit(TrainingSpec("cancel-me", 2, 2, "sleep 60 & sleep 60 & wait",
                                  "  processesPerWorker: 2\n"))
                .status,
            201);
  // And one that ignores SIGTERM: it is killed after its grace period.
  ASSERT_EQ(
      c.Submit(TrainingSpec("stubborn", 1, 0, "trap '' TERM; sleep 60 & wait; sleep 60")).status,
      201);
  ASSERT_TRUE(c.WaitForPhase("default", "cancel-me", "Running"));
  ASSERT_TRUE(c.WaitForPhase("default", "stubborn", "Running"));
  std::vector<pid_t> groups;
  ASSERT_TRUE(WaitFor(
      [&] {
        groups.clear();
        for (const char* job : {"cancel-me", "stubborn"}) {
          for (const auto& t : c.TaskList("default", job)) groups.push_back(t.value("pid", 0));
        }
        return groups.size() == 3 &&
               std::all_of(groups.begin(), groups.end(), [](pid_t p) { return p > 0; });
      },
      10));
  for (pid_t g : groups) {
    ProcessRegistry::Get().AddGroup(g);
    EXPECT_TRUE(GroupAlive(g));
  }
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(c.Delete("/v1/jobs/default/cancel-me").status, 202);
  ASSERT_EQ(c.Delete("/v1/jobs/default/stubborn").status, 202);
  ASSERT_TRUE(c.WaitForPhase("default", "cancel-me", "Cancelled", 20)) << c.Logs();
  ASSERT_TRUE(c.WaitForPhase("default", "stubborn", "Cancelled", 20)) << c.Logs();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(seconds, 1.5) << "the stubborn task got its 2 s grace period";
  for (pid_t g : groups) EXPECT_TRUE(WaitFor([&] { return !GroupAlive(g); }, 5)) << "group " << g;
  const Json stubborn = c.Job("default", "stubborn")["taskList"][0];
  EXPECT_EQ(stubborn["state"], "Stopped");
  EXPECT_EQ(stubborn["signal"], 9) << stubborn.dump();
  for (const auto& t : c.TaskList("default", "cancel-me")) EXPECT_EQ(t["state"], "Stopped");
}

TEST(LiveClusterTest, Kill9OfTheControllerDuringABurstLosesNothingAndReadoptsTasks) {
  Watchdog watchdog(150s, "kill -9 test");
  LiveCluster c;
  ASSERT_TRUE(c.WaitForReadyNodes(2));
  // A long-running gang whose processes must survive the controller's death untouched.
  ASSERT_EQ(c.Submit(TrainingSpec("long", 2, 2, "exec sleep 120")).status, 201);
  ASSERT_TRUE(c.WaitForPhase("default", "long", "Running"));
  std::map<int, std::pair<int, int>> before;  // rank -> (task id, pid)
  ASSERT_TRUE(WaitFor(
      [&] {
        before.clear();
        for (const auto& t : c.TaskList("default", "long")) {
          if (t["state"] == "Running")
            before[t["rank"].get<int>()] = {t["id"].get<int>(), t["pid"].get<int>()};
        }
        return before.size() == 2;
      },
      10));

  // 1,000 submissions from 8 clients; the controller is killed after the 300th acknowledgement.
  constexpr int kJobs = 1000;
  constexpr int kClients = 8;
  std::atomic<int> acked{0};
  std::mutex mu;
  std::set<std::string> acknowledged;
  std::atomic<bool> killed{false};
  const std::string url = c.url();
  auto submitter = [&](int client) {
    httplib::Client http(url);
    http.set_tcp_nodelay(true);
    http.set_connection_timeout(1, 0);
    http.set_read_timeout(5, 0);
    for (int i = client; i < kJobs; i += kClients) {
      const std::string name = "burst-" + std::to_string(i);
      const std::string spec = "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: " + name +
                               ", queue: burst}\nspec: {tasks: 1, gpusPerTask: 1, maxRestarts: 0, "
                               "command: [sleep, \"30\"]}\n";
      for (int tries = 0; tries < 400; ++tries) {
        auto r = http.Post("/v1/jobs", spec, "application/yaml");
        if (r && r->status == 201) {
          std::lock_guard lock(mu);
          acknowledged.insert(name);
          ++acked;
          break;
        }
        if (r && r->status == 409) break;  // stored by an earlier try whose answer was lost
        std::this_thread::sleep_for(50ms);
      }
    }
  };
  std::vector<std::thread> clients;
  for (int k = 0; k < kClients; ++k) clients.emplace_back(submitter, k);
  ASSERT_TRUE(WaitFor([&] { return acked >= 300; }, 60));
  c.KillController(SIGKILL);
  killed = true;
  const int acked_at_kill = acked;
  std::this_thread::sleep_for(300ms);
  c.StartController();
  for (auto& t : clients) t.join();
  ASSERT_TRUE(c.WaitForReadyNodes(2)) << c.Logs();

  // Every acknowledged submission is there, once.
  auto list = c.Get("/v1/jobs?queue=burst");
  ASSERT_EQ(list.status, 200);
  std::set<std::string> stored;
  int rows = 0;
  for (const auto& j : list.json["jobs"]) {
    stored.insert(j["name"].get<std::string>());
    ++rows;
  }
  EXPECT_EQ(rows, static_cast<int>(stored.size())) << "no duplicates";
  for (const auto& name : acknowledged)
    EXPECT_TRUE(stored.contains(name)) << name << " was acknowledged";
  EXPECT_EQ(stored.size(), static_cast<std::size_t>(kJobs))
      << "every submission was retried to an answer";
  EXPECT_GE(acked_at_kill, 300);

  // The gang kept running through the restart: same tasks, same processes, re-adopted.
  ASSERT_TRUE(WaitFor(
      [&] {
        const Json job = c.Job("default", "long");
        int readopted = 0;
        for (const auto& e : job["events"]) readopted += e["type"] == "TaskReadopted";
        return readopted == 2;
      },
      20))
      << c.Job("default", "long").dump(2);
  const Json job = c.Job("default", "long");
  EXPECT_EQ(job["phase"], "Running");
  EXPECT_EQ(job["attempt"], 1) << "re-adopted, not restarted";
  for (const auto& t : job["taskList"]) {
    const int rank = t["rank"].get<int>();
    EXPECT_EQ(t["id"], before[rank].first);
    EXPECT_EQ(t["pid"], before[rank].second);
    EXPECT_EQ(t["state"], "Running");
    EXPECT_TRUE(ProcessAlive(before[rank].second));
  }

  // No GPU is bound to two live tasks: in the store (its constraint), and as the API shows.
  auto store = SqliteStore::Open(c.dir() + "/tesserad.db", {.read_only = true});
  ASSERT_TRUE(store.has_value()) << store.error().message;
  auto contents = (*store)->Load();
  ASSERT_TRUE(contents.has_value());
  std::map<std::pair<std::string, int>, int> milli;
  for (const auto& t : contents->tasks) {
    if (!IsLive(t.state)) continue;
    for (int g : t.gpus) milli[{t.node, g}] += t.gpu_milli;
  }
  for (const auto& [gpu, m] : milli) EXPECT_LE(m, 1000) << gpu.first << " GPU " << gpu.second;
  EXPECT_EQ(contents->jobs.size(), static_cast<std::size_t>(kJobs) + 1);
  // The cluster keeps scheduling after the restart.
  ASSERT_TRUE(WaitFor(
      [&] { return c.Get("/v1/jobs?queue=burst&phase=Running").json["jobs"].size() == 4; }, 20))
      << c.Get("/v1/status").body;
}

TEST(LiveClusterTest, AKilledAgentsGangIsRecoveredAfterTheHeartbeatTimeout) {
  Watchdog watchdog(90s, "agent loss test");
  LiveCluster c(LiveCluster::Options{.agents = 3, .gpus = "4xH100", .heartbeat_timeout_s = 1.5});
  ASSERT_TRUE(c.WaitForReadyNodes(3));
  ASSERT_EQ(c.Submit(TrainingSpec("resilient", 2, 4, "exec sleep 60", "", 3)).status, 201);
  ASSERT_TRUE(c.WaitForPhase("default", "resilient", "Running"));
  std::string victim;
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const auto& t : c.TaskList("default", "resilient")) {
          if (t["state"] == "Running") victim = t["node"];
        }
        return !victim.empty();
      },
      10));
  const int index = victim.back() - '0';
  c.KillAgent(index, SIGKILL);
  // After the timeout the node is Lost and the gang comes back, whole, on the other two nodes.
  ASSERT_TRUE(WaitFor(
      [&] {
        const Json job = c.Job("default", "resilient");
        if (job["attempt"] != 2 || job["phase"] != "Running") return false;
        int running = 0;
        for (const auto& t : job["taskList"])
          running += t["attempt"] == 2 && t["state"] == "Running";
        return running == 2;
      },
      30))
      << c.Job("default", "resilient").dump(2) << c.Logs();
  const Json job = c.Job("default", "resilient");
  EXPECT_EQ(job["restarts"], 1);
  for (const auto& t : job["taskList"]) {
    if (t["attempt"] == 1) {
      EXPECT_EQ(t["state"], t["node"] == victim ? "Lost" : "Stopped") << t.dump();
    } else {
      EXPECT_NE(t["node"], victim);
    }
  }
  bool lost = false;
  for (const auto& n : c.Nodes()) lost |= n["name"] == victim && n["status"] == "Lost";
  EXPECT_TRUE(lost);
}

// Two teams guaranteed half of one agent's 4 simulated GPUs each, reclaim without a grace
// period, under `policy` (drf or drf-naive).
LiveCluster::Options TwoTeams(const TempDir& dir, const std::string& policy) {
  const std::string queues = dir.path() + "/queues.yaml";
  std::ofstream(queues) << "reclaim: {graceSeconds: 0}\n"
                           "queues:\n"
                           "  - {name: research, guaranteed: {gpu: 50%}}\n"
                           "  - {name: product, guaranteed: {gpu: 50%}}\n";
  LiveCluster::Options o;
  o.agents = 1;
  o.gpus = "4xH100";
  o.controller_args = {"--queue-policy", policy, "--queues", queues};
  return o;
}

// A 2-GPU gang of `queue` that sleeps; `more` adds spec fields ("checkpoint: {...}, ").
std::string TeamJob(const std::string& name, const std::string& queue,
                    const std::string& more = "") {
  return "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: " + name +
         ", queue: " + queue + "}\nspec: {" + more +
         "workers: 1, gpusPerWorker: 2, gracePeriodSeconds: 1, command: [sleep, \"60\"]}\n";
}

// Hierarchical quotas in the live cluster: research borrows product's idle half; when product
// submits, the borrowed GPUs are reclaimed (one research gang is stopped and requeued) and
// product's job starts. Jobs must name a leaf queue.
TEST(LiveClusterTest, ATeamGetsItsGuaranteedGpusBackFromABorrowerUnderDrf) {
  Watchdog watchdog(90s, "drf reclaim test");
  TempDir dir("tessera-queues");
  LiveCluster c(TwoTeams(dir, "drf"));
  ASSERT_TRUE(c.WaitForReadyNodes(1)) << c.Logs();
  // Only leaf queues of the tree are accepted.
  auto unknown = c.Submit(TeamJob("lost", "default"));
  EXPECT_EQ(unknown.status, 400);
  EXPECT_NE(unknown.json["error"]
                .value("message", "")
                .find("metadata.queue: 'default' is not a leaf queue of the queue tree"),
            std::string::npos)
      << unknown.body;
  EXPECT_NE(unknown.json["error"].value("message", "").find("one of product, research"),
            std::string::npos)
      << unknown.body;

  ASSERT_EQ(c.Submit(TeamJob("r1", "research")).status, 201);
  ASSERT_EQ(c.Submit(TeamJob("r2", "research")).status, 201);
  ASSERT_TRUE(c.WaitForPhase("research", "r1", "Running")) << c.Logs();
  ASSERT_TRUE(c.WaitForPhase("research", "r2", "Running")) << c.Logs();  // borrowing 2 GPUs

  ASSERT_EQ(c.Submit(TeamJob("p1", "product")).status, 201);
  ASSERT_TRUE(c.WaitForPhase("product", "p1", "Running", 30)) << c.Logs();
  const bool r1 = c.Job("research", "r1").value("phase", "") == "Running";
  const bool r2 = c.Job("research", "r2").value("phase", "") == "Running";
  EXPECT_TRUE(r1 != r2) << "exactly one research gang gave its GPUs back";
  const Json victim = c.Job("research", r1 ? "r2" : "r1");
  EXPECT_EQ(victim.value("phase", ""), "Pending") << victim.dump(2);
  EXPECT_EQ(victim.value("restarts", -1), 0) << "a reclaim is not a failure";
  bool reclaimed = false;
  const Json events = c.Get("/v1/events?since=0").json["events"];
  for (const auto& e : events) {
    if (e.value("type", "") == "JobPreempted" &&
        e.value("message", "").find("reclaimed by queue product") != std::string::npos) {
      reclaimed = true;
    }
  }
  EXPECT_TRUE(reclaimed) << events.dump(2);
  // Each team now holds what it is guaranteed.
  const Json teams = c.Get("/v1/queues").json["queues"];
  std::map<std::string, std::pair<double, double>> held;  // queue -> (allocated, guaranteed)
  for (const auto& q : teams) {
    held[q["name"].get<std::string>()] = {q.value("gpusAllocated", -1.0),
                                          q.value("guaranteedGpus", -1.0)};
  }
  EXPECT_EQ(held["research"], std::make_pair(2.0, 2.0)) << teams.dump(2);
  EXPECT_EQ(held["product"], std::make_pair(2.0, 2.0)) << teams.dump(2);
}

// Which borrowed gang gives its GPUs back: drf takes the one that loses the least work since
// its last checkpoint (estimated from checkpoint.intervalSeconds), drf-naive the most recently
// started one, as Kueue and Volcano do. r1 saves every second and started first; r2 states no
// checkpoints, so all of its run so far would be lost.
TEST(LiveClusterTest, DrfReclaimsTheGangThatLosesLeastWorkAndNaiveTheNewest) {
  Watchdog watchdog(120s, "drf victim choice test");
  for (const std::string policy : {"drf", "drf-naive"}) {
    TempDir dir("tessera-queues");
    LiveCluster c(TwoTeams(dir, policy));
    ASSERT_TRUE(c.WaitForReadyNodes(1)) << c.Logs();
    ASSERT_EQ(c.Submit(TeamJob("r1", "research", "checkpoint: {intervalSeconds: 1}, ")).status,
              201);
    ASSERT_TRUE(c.WaitForPhase("research", "r1", "Running")) << c.Logs();
    std::this_thread::sleep_for(500ms);
    ASSERT_EQ(c.Submit(TeamJob("r2", "research")).status, 201);
    ASSERT_TRUE(c.WaitForPhase("research", "r2", "Running")) << c.Logs();
    // r2 would lose >= 2.5 s x 2 GPUs; r1 at most its last second.
    std::this_thread::sleep_for(2500ms);
    ASSERT_EQ(c.Submit(TeamJob("p1", "product")).status, 201);
    ASSERT_TRUE(c.WaitForPhase("product", "p1", "Running", 30)) << c.Logs();
    const std::string expected = policy == "drf" ? "r1" : "r2";
    const std::string spared = policy == "drf" ? "r2" : "r1";
    EXPECT_EQ(c.Job("research", expected).value("phase", ""), "Pending") << policy;
    EXPECT_EQ(c.Job("research", spared).value("phase", ""), "Running") << policy;
  }
}

TEST(LiveClusterTest, BadSpecsAreRefusedWithClearErrorsAndNothingIsStored) {
  Watchdog watchdog(60s, "bad specs test");
  LiveCluster c(LiveCluster::Options{.agents = 1});
  struct Case {
    std::string body;
    std::string expect;  // in the error message
  };
  const std::string head = "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: bad}\n";
  std::string non_utf8 = head + "spec: {workers: 1, gpusPerWorker: 1, command: [\"x\xff\"]}\n";
  std::string nested(3000, '[');
  const std::vector<Case> cases = {
      {head + "spec: {workers: two, gpusPerWorker: 1, command: [x]}\n",
       "spec.workers: must be an integer, got string \"two\""},
      {head + "spec: {workers: 1, gpusPerWorker: [1], command: [x]}\n",
       "spec.gpusPerWorker: must be a number of GPUs"},
      {head + "spec: {workers: -3, gpusPerWorker: 1, command: [x]}\n",
       "spec.workers: must be between 1 and 100000, got -3"},
      {head + "spec: {workers: 99999999999999, gpusPerWorker: 1, command: [x]}\n",
       "spec.workers: must be between 1 and 100000"},
      {head + "spec: {workers: 1, gpusPerWorker: 1000, command: [x]}\n",
       "spec.gpusPerWorker: must be between 0 and 16"},
      {"apiVersion: tessera/v1\nkind: SlurmJob\nmetadata: {name: a}\nspec: {}\n",
       "kind: unknown kind \"SlurmJob\""},
      {"apiVersion: tessera/v1\nkind: DevSession\nmetadata: {name: " + std::string(200, 'a') +
           "}\nspec: {}\n",
       "metadata.name: must be at most 63 characters, got 200"},
      {"apiVersion: tessera/v1\nkind: DevSession\nmetadata: {name: \"../../etc\"}\nspec: {}\n",
       "metadata.name: must consist of"},
      {non_utf8, "not valid UTF-8"},
      {"{\"apiVersion\": \"tessera/v1\", \"kind\": \"DevSession\", \"metadata\": {\"name\": "
       "\"a\\u0000b\"}, \"spec\": {}}",
       "metadata.name: must not contain NUL bytes"},
      {nested, "nested deeper than"},
      {"{\"kind\": ", "invalid JSON"},
      {"", "document: empty"},
      {"- just\n- a list\n", "a job spec must be a mapping"},
  };
  for (const auto& k : cases) {
    auto r = c.Post("/v1/jobs", k.body);
    EXPECT_EQ(r.status, 400) << k.body.substr(0, 80);
    ASSERT_TRUE(r.json.is_object()) << r.body;
    EXPECT_NE(r.json["error"].value("message", "").find(k.expect), std::string::npos)
        << "got: " << r.json["error"].value("message", "") << "\nwanted: " << k.expect;
  }
  // Over-long bodies are refused before parsing.
  auto big =
      c.Post("/v1/jobs", head + "spec: {command: [\"" + std::string(2 << 20, 'a') + "\"]}\n");
  EXPECT_EQ(big.status, 413);
  // Field details come as values too.
  auto detailed =
      c.Post("/v1/jobs", head + "spec: {workers: 0, gpusPerWorker: 0.5, command: [x], bogus: 1}\n");
  ASSERT_EQ(detailed.status, 400);
  std::set<std::string> fields;
  for (const auto& d : detailed.json["error"]["details"])
    fields.insert(d["field"].get<std::string>());
  EXPECT_EQ(fields, (std::set<std::string>{"spec.bogus", "spec.workers", "spec.gpusPerWorker"}));
  // Malformed agent messages and paths are refused too; nothing escapes the log directory.
  EXPECT_EQ(c.Post("/v1/agents/register", "{\"node\": 5}").status, 400);
  EXPECT_EQ(c.Post("/v1/agents/node-0/heartbeat", "not json").status, 400);
  EXPECT_EQ(c.Get("/v1/logs/default/..%2F..%2Fetc?rank=0").status, 400);
  EXPECT_EQ(c.Get("/v1/events?since=abc").status, 400);
  // The controller is up and stored nothing.
  EXPECT_EQ(c.Get("/v1/healthz").status, 200);
  EXPECT_EQ(c.Get("/v1/jobs").json["jobs"].size(), 0u);
  // Duplicate names in one queue are refused; the same name in another queue is fine.
  const std::string ok =
      "apiVersion: tessera/v1\nkind: DevSession\nmetadata: {name: dup}\nspec: {gpus: 0}\n";
  EXPECT_EQ(c.Submit(ok).status, 201);
  auto dup = c.Submit(ok);
  EXPECT_EQ(dup.status, 409);
  EXPECT_NE(dup.json["error"].value("message", "").find("already exists"), std::string::npos);
  EXPECT_EQ(c.Submit("apiVersion: tessera/v1\nkind: DevSession\nmetadata: {name: dup, queue: "
                     "other}\nspec: {gpus: 0}\n")
                .status,
            201);
}

TEST(AgentTest, RefusesToRunTasksAsRoot) {
  TempDir dir("tessera-agent");
  auto r = RunCommand({BinDir() + "/tessera-agent", "--server", "http://127.0.0.1:9", "--node", "n",
                       "--state", dir.path(), "--simulate-gpus", "1xH100", "--run-as", "root"},
                      10);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("refusing to run tasks as root"), std::string::npos) << r.err;
  auto bad = RunCommand({BinDir() + "/tessera-agent", "--node", "n", "--state", dir.path(),
                         "--simulate-gpus", "99xH100"},
                        10);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("count must be 0..16"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace tessera::testing
