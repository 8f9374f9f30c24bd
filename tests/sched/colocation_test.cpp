// Online/offline co-location: oversell credit and victim choice with their arithmetic, the
// config's validation, and the scheduling cycle's co-location step: online evicts the cheapest
// offline set, offline never evicts online, offline soaks oversold credit and gives it back
// when the online load rises.
#include <gtest/gtest.h>

#include <array>
#include <map>

#include "core/colocation_config.h"
#include "core/rng.h"
#include "sched/colocation/eviction.h"
#include "sched/colocation/oversell.h"
#include "sched/scheduler.h"
#include "sched/scheduler_fixtures.h"

namespace tessera {
namespace {

TEST(OversellTest, CreditIsTheFlooredShareOfUnusedGpu) {
  EXPECT_EQ(OversellCredit(500, 1000, 300), 350);  // 0.5 × 700
  EXPECT_EQ(OversellCredit(333, 1000, 300), 233);  // 333 × 700 / 1000 = 233.1
  EXPECT_EQ(OversellCredit(1000, 600, 100), 500);
  EXPECT_EQ(OversellCredit(0, 1000, 0), 0);
  EXPECT_EQ(OversellCredit(800, 500, 700), 0);  // using more than asked: no headroom
}

TEST(OversellTest, ChargedPlacementOfAnOversoldTaskHoldsNoGpu) {
  Placement p = {TaskPlacement{NodeId(3), 0b10, 250, 4000, 8192}};
  EXPECT_EQ(ChargedPlacement(p, false), p);
  const Placement c = ChargedPlacement(p, true);
  EXPECT_EQ(c[0].gpu_mask, 0);
  EXPECT_EQ(c[0].gpu_milli, 0);
  EXPECT_EQ(c[0].cpu_milli, 4000);
  EXPECT_EQ(c[0].memory_mib, 8192);
}

TEST(EvictionTest, CostIsGpuTimeLostPlusTheEvictionCost) {
  EXPECT_EQ(EvictionCost(500, 100 * kSecond, 30 * kSecond), 500 * 130'000);
  EXPECT_EQ(EvictionCost(1000, -5, 0), 0);
}

TEST(EvictionTest, CheapestFirstThenMinimal) {
  // Sizes 400, 300, 200, 500 milli at costs 5, 1, 3, 2; 600 milli needed. Cheapest first takes
  // #1 (300) then #3 (800 in all); neither can be spared.
  std::vector<EvictionCandidate> c = {{JobId(0), 5}, {JobId(1), 1}, {JobId(2), 3}, {JobId(3), 2}};
  const std::vector<std::int64_t> size = {400, 300, 200, 500};
  auto need = [&](std::int64_t want) {
    return [&, want](const std::vector<char>& chosen) {
      std::int64_t freed = 0;
      for (std::size_t i = 0; i < chosen.size(); ++i) freed += chosen[i] ? size[i] : 0;
      return freed >= want;
    };
  };
  bool ok = false;
  EXPECT_EQ(ChooseVictims(c, need(600), &ok), (std::vector<std::size_t>{1, 3}));
  EXPECT_TRUE(ok);
  // 1,300 needed: cheapest first takes #1, #3, #2 (1,000) and #0 (1,400); sparing any one
  // leaves at most 1,200, so all four stay.
  EXPECT_EQ(ChooseVictims(c, need(1300), &ok), (std::vector<std::size_t>{1, 3, 2, 0}));
  // 1,100 needed: after all four (1,400), #2 can go (1,200 ≥ 1,100), then no other can.
  EXPECT_EQ(ChooseVictims(c, need(1100), &ok), (std::vector<std::size_t>{1, 3, 0}));
  EXPECT_TRUE(ok);
  EXPECT_TRUE(ChooseVictims(c, need(0), &ok).empty());
  EXPECT_TRUE(ok);
  EXPECT_TRUE(ChooseVictims(c, need(2000), &ok).empty());
  EXPECT_FALSE(ok);
}

TEST(EvictionTest, AVictimMadeRedundantByADearerOneIsSpared) {
  // 900 needed from sizes 100, 100, 900 at costs 1, 2, 3: greedy takes all three, then spares
  // #1 and #0: only the 900 is evicted.
  std::vector<EvictionCandidate> c = {{JobId(7), 1}, {JobId(8), 2}, {JobId(9), 3}};
  const std::vector<std::int64_t> size = {100, 100, 900};
  bool ok = false;
  auto v = ChooseVictims(
      c,
      [&](const std::vector<char>& chosen) {
        std::int64_t f = 0;
        for (std::size_t i = 0; i < chosen.size(); ++i) f += chosen[i] ? size[i] : 0;
        return f >= 900;
      },
      &ok);
  EXPECT_EQ(v, (std::vector<std::size_t>{2}));
}

TEST(ColocationConfigTest, RefusesWhatCannotBeRight) {
  ColocationConfig c;
  EXPECT_TRUE(ValidateColocationConfig(c));
  c.oversell_permille = 1200;
  auto e = ValidateColocationConfig(c);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().message.rfind("oversell:", 0), 0u) << e.error().message;
  c = {};
  c.offline.push_back(WorkloadKind::kInference);
  e = ValidateColocationConfig(c);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("InferenceService is also online"), std::string::npos);
  c = {};
  c.eviction_cost = -1;
  EXPECT_FALSE(ValidateColocationConfig(c));
  c = {};
  c.online.clear();
  EXPECT_FALSE(ValidateColocationConfig(c));
}

TEST(ColocationConfigTest, SchedulerRefusesAPreemptiveOrder) {
  SchedulerConfig c;
  c.queue_policy = "las";
  c.colocation.enabled = true;
  auto s = Scheduler::Create(c);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("colocation: needs a queue policy"), std::string::npos);
  c.queue_policy = "fifo";
  c.colocation.oversell_permille = -1;
  s = Scheduler::Create(c);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message.rfind("colocation.oversell:", 0), 0u) << s.error().message;
}

// One node of two H100s; jobs of one task.
struct Fixture {
  Cluster cluster;
  std::vector<Workload> jobs;
  Fixture() { EXPECT_TRUE(cluster.AddNode("n0", "H100", 2, 64000, 1 << 20)); }
  Workload& Add(WorkloadKind kind, std::int32_t milli, int priority = 0) {
    Workload w;
    w.id = JobId(static_cast<std::uint32_t>(jobs.size()));
    w.name = std::string(KindName(kind)) + "-" + std::to_string(jobs.size());
    w.kind = kind;
    w.priority = priority;
    w.groups.push_back({"task", 1, TaskShape{1000, 1024, 1, milli}});
    jobs.reserve(16);
    jobs.push_back(w);
    return jobs.back();
  }
};

Scheduler Colocating(std::int32_t oversell_permille) {
  SchedulerConfig c;
  c.queue_policy = "fifo";
  c.colocation.enabled = true;
  c.colocation.oversell_permille = oversell_permille;
  return ValidScheduler(c);
}

JobView Running(const Workload& w, int gpu, Tick started, bool oversold = false,
                std::int32_t used = -1) {
  JobView v;
  v.job = &w;
  v.phase = JobPhase::kRunning;
  v.started = started;
  v.oversold = oversold;
  v.used_gpu_milli = used;
  const auto& s = w.groups[0].shape;
  v.placement = {TaskPlacement{NodeId(0), static_cast<std::uint16_t>(1u << gpu), s.gpu_milli,
                               s.cpu_milli, s.memory_mib}};
  return v;
}

TEST(ColocationCycleTest, OnlineEvictsTheCheapestOfflineSet) {
  Fixture f;
  const Workload& a = f.Add(WorkloadKind::kBatch, 1000);  // GPU 0, cost 1000 × 130 s
  const Workload& b = f.Add(WorkloadKind::kBatch, 500);   // GPU 1, cost 500 × 130 s
  const Workload& online = f.Add(WorkloadKind::kInference, 1000, 100);
  ClusterState state(f.cluster);
  Snapshot snap;
  snap.now = 100 * kSecond;
  snap.jobs = {Running(a, 0, 0), Running(b, 1, 0), Pending(online)};
  for (const auto& v : snap.jobs) {
    if (v.phase == JobPhase::kRunning) {
      ASSERT_TRUE(state.Apply(v.placement));
    }
  }
  const Decisions d = Colocating(0).Schedule(snap, state);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].kind, Decision::Kind::kPreempt);
  EXPECT_EQ(d[0].job, b.id);
  EXPECT_EQ(d[1].kind, Decision::Kind::kBind);
  EXPECT_EQ(d[1].job, online.id);
  EXPECT_EQ(d[1].placement[0].gpu_mask, 0b10);
  EXPECT_EQ(state.allocated_gpu_milli(), 2000);  // a (1000) and the replica (1000)
}

// Live, victims hold their GPUs until their processes are gone (Snapshot::releasing). A replica
// that waits for them keeps what is already free: a victim requeued meanwhile must not take
// the half GPU its partner freed, or it is evicted again for the same replica, over and over
// (the live two clocks saw 9 evictions of two tasks for one replica in 0.4 s).
TEST(ColocationCycleTest, AWaitingReplicaKeepsWhatItsVictimsFreed) {
  Fixture f;
  const Workload& r0 = f.Add(WorkloadKind::kInference, 1000, 100);
  const Workload& requeued = f.Add(WorkloadKind::kBatch, 500);  // its process has exited
  const Workload& r1 = f.Add(WorkloadKind::kInference, 1000, 100);
  ClusterState state(f.cluster);
  Snapshot snap;
  snap.now = 50 * kSecond;
  snap.jobs = {Running(r0, 0, 0), Pending(requeued), Pending(r1)};
  ASSERT_TRUE(state.Apply(snap.jobs[0].placement));
  // The other victim still stopping on GPU 1, its half taken until it is gone.
  const Placement stopping = {TaskPlacement{NodeId(0), 0b10, 500, 1000, 1024}};
  ASSERT_TRUE(state.Apply(stopping));
  snap.releasing.push_back(stopping);
  const Decisions d = Colocating(500).Schedule(snap, state);
  for (const Decision& x : d) {
    EXPECT_NE(x.job, requeued.id) << "the requeued victim was placed again";
    EXPECT_NE(x.kind, Decision::Kind::kPreempt);
  }
  EXPECT_TRUE(d.empty());
}

TEST(ColocationCycleTest, OfflineNeverEvictsOnline) {
  Fixture f;
  const Workload& r0 = f.Add(WorkloadKind::kInference, 1000, 100);
  const Workload& r1 = f.Add(WorkloadKind::kInference, 600, 100);
  const Workload& batch = f.Add(WorkloadKind::kBatch, 500, 1000);  // even at a higher priority
  ClusterState state(f.cluster);
  Snapshot snap;
  snap.now = 10 * kSecond;
  snap.jobs = {Running(r0, 0, 0), Running(r1, 1, 0), Pending(batch)};
  ASSERT_TRUE(state.Apply(snap.jobs[0].placement));
  ASSERT_TRUE(state.Apply(snap.jobs[1].placement));
  EXPECT_TRUE(Colocating(0).Schedule(snap, state).empty());
  EXPECT_EQ(state.allocated_gpu_milli(), 1600);
}

TEST(ColocationCycleTest, OfflineSoaksOversoldCreditAndGivesItBack) {
  Fixture f;
  const Workload& r0 = f.Add(WorkloadKind::kInference, 1000, 100);
  const Workload& r1 = f.Add(WorkloadKind::kInference, 1000, 100);
  const Workload& b250 = f.Add(WorkloadKind::kBatch, 250);
  const Workload& b100 = f.Add(WorkloadKind::kBatch, 100);
  ClusterState state(f.cluster);
  // r0 uses 400 of 1000, r1 900: credit 0.5 × 600 = 300 on GPU 0 and 0.5 × 100 = 50 on GPU 1.
  Snapshot snap;
  snap.now = 60 * kSecond;
  snap.jobs = {Running(r0, 0, 0, false, 400), Running(r1, 1, 0, false, 900), Pending(b250),
               Pending(b100)};
  ASSERT_TRUE(state.Apply(snap.jobs[0].placement));
  ASSERT_TRUE(state.Apply(snap.jobs[1].placement));
  const Scheduler s = Colocating(500);
  Decisions d = s.Schedule(snap, state);
  // 250 goes on GPU 0 (300 spare); 100 fits neither GPU 0 (50 left) nor GPU 1 (50).
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].job, b250.id);
  EXPECT_TRUE(d[0].oversold);
  EXPECT_EQ(d[0].placement[0].gpu_mask, 0b01);
  EXPECT_EQ(d[0].placement[0].gpu_milli, 250);
  EXPECT_EQ(state.allocated_gpu_milli(), 2000);  // the GPU share is on credit, not allocated
  EXPECT_EQ(state.node(NodeId(0)).free.cpu_milli, 64000 - 3000);

  // r0's load rises to 600: credit 0.5 × 400 = 200 < 250, so the oversold task goes.
  snap.now = 120 * kSecond;
  snap.jobs = {Running(r0, 0, 0, false, 600), Running(r1, 1, 0, false, 900),
               Running(b250, 0, 60 * kSecond, true), Pending(b100)};
  d = s.Schedule(snap, state);
  ASSERT_GE(d.size(), 1u);
  EXPECT_EQ(d[0].kind, Decision::Kind::kPreempt);
  EXPECT_EQ(d[0].job, b250.id);
  // The 100 then fits the 200 of credit left on GPU 0.
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[1].job, b100.id);
  EXPECT_TRUE(d[1].oversold);
  EXPECT_EQ(state.node(NodeId(0)).free.cpu_milli, 64000 - 3000);
}

TEST(ColocationCycleTest, NoOversellPlacesNothingOnCredit) {
  Fixture f;
  const Workload& r0 = f.Add(WorkloadKind::kInference, 1000, 100);
  const Workload& r1 = f.Add(WorkloadKind::kInference, 1000, 100);
  const Workload& b = f.Add(WorkloadKind::kBatch, 100);
  ClusterState state(f.cluster);
  Snapshot snap;
  snap.jobs = {Running(r0, 0, 0, false, 0), Running(r1, 1, 0, false, 0), Pending(b)};
  ASSERT_TRUE(state.Apply(snap.jobs[0].placement));
  ASSERT_TRUE(state.Apply(snap.jobs[1].placement));
  EXPECT_TRUE(Colocating(0).Schedule(snap, state).empty());
}

// Property: over many cycles with online loads moving at random, no online job is ever
// preempted, every GPU's oversold shares stay within its credit for the loads just given, and
// releasing everything returns the cluster to empty (no drift in the milli accounting).
TEST(ColocationCycleTest, RandomLoadsKeepOversoldWithinCredit) {
  Cluster c;
  for (int i = 0; i < 2; ++i)
    ASSERT_TRUE(c.AddNode("n" + std::to_string(i), "H100", 4, 256000, 1 << 20));
  std::vector<Workload> jobs;
  jobs.reserve(64);
  Rng rng(11);
  for (int i = 0; i < 64; ++i) {
    Workload w;
    w.id = JobId(static_cast<std::uint32_t>(i));
    w.name = "j" + std::to_string(i);
    w.kind = i < 10 ? WorkloadKind::kInference : WorkloadKind::kBatch;
    w.priority = i < 10 ? 100 : 0;
    const auto milli =
        static_cast<std::int32_t>(i < 10 ? (i % 2 == 0 ? 1000 : 500) : 100 + rng.Uniform(500));
    w.groups.push_back({"task", 1, TaskShape{1000, 1024, 1, milli}});
    jobs.push_back(w);
  }
  struct Run {
    bool running = false;
    bool oversold = false;
    Placement placement;
  };
  std::vector<Run> runs(jobs.size());
  ClusterState state(c);
  const Scheduler s = Colocating(700);
  int oversold_binds = 0, credit_evictions = 0, online_evictions = 0;
  for (int cycle = 0; cycle < 300; ++cycle) {
    Snapshot snap;
    snap.now = cycle * kMinute;
    snap.seed = static_cast<std::uint64_t>(cycle);
    std::vector<std::int32_t> used(jobs.size(), -1);
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      JobView v;
      v.job = &jobs[i];
      if (runs[i].running) {
        v.phase = JobPhase::kRunning;
        v.placement = runs[i].placement;
        v.oversold = runs[i].oversold;
        if (jobs[i].kind == WorkloadKind::kInference) {
          used[i] = static_cast<std::int32_t>(
              rng.Uniform(static_cast<std::uint64_t>(jobs[i].groups[0].shape.gpu_milli) + 1));
          v.used_gpu_milli = used[i];
        }
      } else if (jobs[i].kind == WorkloadKind::kInference && rng.Uniform(4) != 0) {
        continue;  // replicas come and go: this one is not wanted now
      }
      snap.jobs.push_back(std::move(v));
    }
    for (const Decision& d : s.Schedule(snap, state)) {
      Run& r = runs[d.job.value];
      if (d.kind == Decision::Kind::kPreempt) {
        ASSERT_NE(jobs[d.job.value].kind, WorkloadKind::kInference) << "cycle " << cycle;
        ASSERT_TRUE(r.running);
        const bool credit = d.reason.find("took back") != std::string::npos;
        credit_evictions += credit ? 1 : 0;
        online_evictions += credit ? 0 : 1;
        r = Run{};
      } else if (d.kind == Decision::Kind::kBind) {
        r = Run{true, d.oversold, d.placement};
        oversold_binds += d.oversold ? 1 : 0;
        if (jobs[d.job.value].kind == WorkloadKind::kInference)
          used[d.job.value] = d.placement[0].gpu_milli;
      }
    }
    // Per GPU: oversold ≤ floor(0.7 × Σ (requested − used)).
    std::map<std::pair<std::uint32_t, int>, std::array<std::int64_t, 3>>
        gpu;  // req, used, oversold
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      if (!runs[i].running) continue;
      for (const TaskPlacement& t : runs[i].placement) {
        for (int g = 0; g < 4; ++g) {
          if (!(t.gpu_mask & (1u << g))) continue;
          auto& a = gpu[{t.node.value, g}];
          if (jobs[i].kind == WorkloadKind::kInference) {
            a[0] += t.gpu_milli;
            a[1] += used[i];
          } else if (runs[i].oversold) {
            a[2] += t.gpu_milli;
          }
        }
      }
    }
    for (const auto& [key, a] : gpu) {
      ASSERT_LE(a[2], OversellCredit(700, a[0], a[1]))
          << "cycle " << cycle << " node " << key.first << " GPU " << key.second;
    }
    // Online replicas not wanted next cycle leave (as an autoscaler would).
    for (std::size_t i = 0; i < 10; ++i) {
      if (runs[i].running && rng.Uniform(8) == 0) {
        state.Release(runs[i].placement);
        runs[i] = Run{};
      }
    }
    // Offline tasks finish now and then.
    for (std::size_t i = 10; i < jobs.size(); ++i) {
      if (runs[i].running && rng.Uniform(10) == 0) {
        state.Release(ChargedPlacement(runs[i].placement, runs[i].oversold));
        runs[i] = Run{};
      }
    }
  }
  // The run went through every path: oversold binds, credit taken back, online evicting.
  EXPECT_GT(oversold_binds, 0);
  EXPECT_GT(credit_evictions, 0);
  EXPECT_GT(online_evictions, 0);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (runs[i].running) state.Release(ChargedPlacement(runs[i].placement, runs[i].oversold));
  }
  EXPECT_EQ(state.allocated_gpu_milli(), 0);
  for (const Node& n : c.nodes()) EXPECT_EQ(state.node(n.id).free, n.capacity);
}

}  // namespace
}  // namespace tessera
