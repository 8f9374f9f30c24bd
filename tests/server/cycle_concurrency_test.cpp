// ctest-labels: integration
// The API answers while a scheduling cycle runs: the cycle takes its snapshot under the
// controller's lock, runs Schedule() outside it and takes the lock again only to apply the
// decisions. A cycle made long by many pending jobs that backfill tries one by one (every
// node has one GPU free, every pending job needs two) runs in one thread while another
// submits jobs and reads the job list and status; those calls must be answered during the
// cycle, each in a fraction of its length.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "server/controller.h"
#include "spec/document.h"
#include "store/sqlite_store.h"

namespace tessera {
namespace {

using Clock = std::chrono::steady_clock;

std::string Gang(const std::string& name, int gpus, int priority) {
  return "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: " + name +
         "}\nspec: {workers: 1, gpusPerWorker: " + std::to_string(gpus) +
         ", priority: " + std::to_string(priority) + ", command: [sleep, '600']}\n";
}

// Writes `nodes` Ready nodes of 3 simulated GPUs, one 2-GPU filler job per node (priority 10,
// so each node keeps one GPU free once they run) and `pending` 2-GPU jobs, in one commit.
void Preload(Store& store, int nodes, int pending) {
  Change c;
  c.put_queues.push_back({"default", 1});
  std::int64_t id = 1;
  auto add = [&](const std::string& name, int priority) {
    auto spec = ParseJobSpec(Gang(name, 2, priority));
    ASSERT_TRUE(spec) << spec.error().message;
    JobRecord j;
    j.id = id++;
    j.queue = "default";
    j.name = name;
    j.kind = "TrainingJob";
    j.spec_json = DumpJson(JobSpecToJson(*spec));
    j.submit_ms = j.id;
    c.put_jobs.push_back(j);
    UnitRecord u;
    u.job_id = j.id;
    c.put_units.push_back(u);
  };
  for (int n = 0; n < nodes; ++n) {
    NodeRecord node;
    node.name = "node-" + std::to_string(n);
    node.address = "127.0.0.1";
    node.gpu_model = "H100";
    node.gpu_count = 3;
    node.simulated = true;
    node.cpu_milli = 64000;
    node.memory_mib = 512 * 1024;
    node.status = NodeStatus::kReady;
    c.put_nodes.push_back(node);
    add("filler-" + std::to_string(n), 10);
  }
  for (int p = 0; p < pending; ++p) add("pending-" + std::to_string(p), 0);
  auto committed = store.Commit(c);
  ASSERT_TRUE(committed) << committed.error().message;
}

TEST(CycleConcurrencyTest, TheApiAnswersWhileALongCycleRuns) {
  char tmpl[] = "/tmp/tessera-cycle-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  {
    auto store = SqliteStore::Open(dir + "/state.db");
    ASSERT_TRUE(store) << store.error().message;
    constexpr int kNodes = 1500, kPending = 60000;
    Preload(**store, kNodes, kPending);
    ControllerOptions options;
    options.scheduler.queue_policy = "backfill";
    // The plain scan keeps the cycle long (the class index makes it short enough that a call
    // slowed by a loaded machine is a third of it): this test is about the lock, not placement.
    options.scheduler.placement_index = false;
    options.heartbeat_timeout_ms = 600'000;  // no agents in this test
    auto controller = Controller::Create(store->get(), options);
    ASSERT_TRUE(controller) << controller.error().message;
    Controller& c = **controller;
    ASSERT_EQ(c.RunSchedulingCycle(), kNodes) << "the fillers start, one per node";

    // The long cycle: nothing binds, each pending job is tried on every node.
    Clock::time_point cycle_start, cycle_end;
    std::atomic<bool> done{false};
    int bound = -1;
    std::thread cycle([&] {
      cycle_start = Clock::now();
      bound = c.RunSchedulingCycle();
      cycle_end = Clock::now();
      done = true;
    });
    struct Call {
      Clock::time_point start, end;
    };
    std::vector<Call> calls;
    const auto give_up = Clock::now() + std::chrono::seconds(120);
    for (int i = 0; !done && Clock::now() < give_up; ++i) {
      Call call{Clock::now(), {}};
      switch (i % 3) {
        case 0: {
          auto r = c.Submit(Gang("probe-" + std::to_string(i), 2, 0));
          ASSERT_TRUE(r) << r.error().error.message;
          break;
        }
        case 1:
          EXPECT_EQ(c.ListJobs({"default", "filler-0", {}, 1}).jobs.size(), 1u);
          break;
        default:
          EXPECT_EQ(c.ServerStatus()["nodes"], kNodes);
      }
      call.end = Clock::now();
      calls.push_back(call);
    }
    cycle.join();
    EXPECT_EQ(bound, 0);
    const auto cycle_ms =
        std::chrono::duration<double, std::milli>(cycle_end - cycle_start).count();
    int during = 0;
    double worst_ms = 0;
    for (const Call& call : calls) {
      if (call.start < cycle_start || call.end > cycle_end) continue;
      ++during;
      worst_ms = std::max(worst_ms,
                          std::chrono::duration<double, std::milli>(call.end - call.start).count());
    }
    std::printf("cycle %.0f ms; %d API calls answered during it, the slowest in %.1f ms\n",
                cycle_ms, during, worst_ms);
    ASSERT_GE(cycle_ms, 100) << "the cycle was too short to show anything";
    EXPECT_GE(during, 10);
    EXPECT_LT(worst_ms, cycle_ms / 2);  // a call blocked by the cycle would wait all of it
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tessera
