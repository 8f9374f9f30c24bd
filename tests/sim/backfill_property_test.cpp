// Property: with run-time estimates equal to the actual run times, backfilling with a domain
// reservation never delays the head gang. Over seeded random worlds on a three-leaf cluster:
// jobs submitted at t = 0 fill part of the cluster; at t = 1 s a gang that requires one leaf
// arrives and cannot start; from t = 2 s a stream of smaller jobs (single GPUs up to two-node
// gangs) arrives behind it. Under fifo nothing passes the head, so its start there is the
// earliest instant its leaf frees up; under backfill ("domain") it must start no later. The
// cluster-wide GPU count of EASY ("gpu-count") does delay it in some of these worlds, which
// shows the property is not vacuous.
#include <gtest/gtest.h>

#include "core/rng.h"
#include "sim/replay_simulation.h"

namespace tessera {
namespace {

Cluster ThreeLeaves() {
  Cluster c;
  for (std::uint32_t i = 0; i < 12; ++i) {
    EXPECT_TRUE(c.AddNode("n" + std::to_string(i), "H100", 8, 64000, 1 << 20, {0, i / 4}));
  }
  c.set_topology(Topology{{"spine", "leaf"}, {{"spine-0"}, {"leaf-0", "leaf-1", "leaf-2"}}});
  return c;
}

Workload Job(std::size_t id, Tick submit, Tick duration, int workers, int gpus,
             std::string require = "") {
  Workload w;
  w.id = JobId(static_cast<std::uint32_t>(id));
  w.name = "j" + std::to_string(id);
  w.submit = submit;
  w.duration = duration;
  w.groups.push_back({"worker", workers, TaskShape{0, 0, gpus, 1000}});
  w.topology.require = std::move(require);
  return w;
}

struct World {
  std::vector<Workload> jobs;
  std::size_t head = 0;
};

World RandomWorld(std::uint64_t seed) {
  Rng rng(seed);
  World w;
  // Initial load: whole nodes with random run times, on 9..11 of the 12 nodes.
  const int busy = 9 + static_cast<int>(rng.Uniform(3));
  for (int i = 0; i < busy; ++i) {
    w.jobs.push_back(
        Job(w.jobs.size(), 0, (10 + static_cast<Tick>(rng.Uniform(600))) * kSecond, 1, 8));
  }
  w.head = w.jobs.size();
  w.jobs.push_back(Job(w.head, 1 * kSecond, 300 * kSecond, 4, 8, "leaf"));  // a whole leaf
  for (int i = 0; i < 30; ++i) {
    const Tick submit = (2 + static_cast<Tick>(rng.Uniform(60))) * kSecond;
    const Tick duration = (5 + static_cast<Tick>(rng.Uniform(900))) * kSecond;
    const int shape = static_cast<int>(rng.Uniform(4));
    if (shape == 3) {
      w.jobs.push_back(Job(w.jobs.size(), submit, duration, 2, 8, "leaf"));
    } else {
      w.jobs.push_back(Job(w.jobs.size(), submit, duration, 1, 1 << shape));
    }
  }
  std::stable_sort(w.jobs.begin() + static_cast<long>(w.head) + 1, w.jobs.end(),
                   [](const Workload& a, const Workload& b) { return a.submit < b.submit; });
  for (std::size_t i = 0; i < w.jobs.size(); ++i)
    w.jobs[i].id = JobId(static_cast<std::uint32_t>(i));
  return w;
}

Tick HeadStart(const Cluster& c, const World& w, const std::string& queue,
               const std::string& reservation, std::uint64_t seed) {
  ReplayOptions o;
  o.scheduler.queue_policy = queue;
  o.scheduler.backfill_reservation = reservation;
  o.seed = seed;
  auto r = RunReplay(c, w.jobs, o);
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  return r ? r->jobs[w.head].first_start : -1;
}

TEST(BackfillPropertyTest, DomainReservationNeverDelaysTheHeadGang) {
  const Cluster c = ThreeLeaves();
  int easy_delays = 0;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    const World w = RandomWorld(seed);
    const Tick fifo = HeadStart(c, w, "fifo", "domain", seed);
    ASSERT_GT(fifo, 1 * kSecond) << "seed " << seed << ": the head should have been blocked";
    const Tick domain = HeadStart(c, w, "backfill", "domain", seed);
    EXPECT_LE(domain, fifo) << "seed " << seed;
    easy_delays += HeadStart(c, w, "backfill", "gpu-count", seed) > fifo;
  }
  EXPECT_GT(easy_delays, 0);
}

}  // namespace
}  // namespace tessera
