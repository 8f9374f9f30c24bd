// The simulator's side of elastic jobs and GPU-model speeds, worked by hand on one node of
// 8 GPUs: progress scales with an elastic job's size, (w / n)^elastic_scaling, and with the
// relative speed of the GPU model it runs on.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/replay_simulation.h"

namespace tessera {
namespace {

Cluster OneNode(const std::string& model) {
  Cluster c;
  EXPECT_TRUE(c.AddNode("n0", model, 8, 64000, 1 << 20));
  return c;
}

Workload Job(std::uint32_t id, int workers, int gpus, Tick submit_s, Tick duration_s) {
  Workload w;
  w.id = JobId(id);
  w.name = "j" + std::to_string(id);
  w.submit = submit_s * kSecond;
  w.duration = duration_s * kSecond;
  w.groups.push_back({"worker", workers, TaskShape{0, 0, gpus, 1000}});
  return w;
}

ReplayResult Replay(const Cluster& c, const std::vector<Workload>& jobs, bool elastic,
                    double scaling = 1.0) {
  ReplayOptions o;
  o.scheduler.queue_policy = "fifo";
  o.scheduler.elastic = elastic;
  o.elastic_scaling = scaling;
  auto r = RunReplay(c, jobs, o);
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  return *r;
}

TEST(PolicyReplayTest, ElasticJobGrowsAndFinishesSooner) {
  // E: nominal 2 × 2 GPUs, 100 s at that size, max 4 workers. Alone on 8 GPUs it grows to 4
  // workers at once: twice the rate, done at 50 s (linear) or 100 / 2^0.5 = 70.7 s (α = 0.5).
  Cluster c = OneNode("H100");
  Workload e = Job(0, 2, 2, 0, 100);
  e.min_workers = 1;
  e.max_workers = 4;
  EXPECT_EQ(Replay(c, {e}, true).jobs[0].finish, 50 * kSecond);
  EXPECT_EQ(Replay(c, {e}, false).jobs[0].finish, 100 * kSecond);
  EXPECT_EQ(Replay(c, {e}, true, 0.5).jobs[0].finish,
            static_cast<Tick>(std::llround(100000 / std::sqrt(2.0))));
}

TEST(PolicyReplayTest, ElasticJobShrinksForTheHeadAndKeepsItsProgress) {
  // E grows to 4 workers (8 GPUs) at 0. At 10 s P (4 GPUs, 10 s) arrives: E shrinks to its
  // minimum, 1 worker, P starts, E grows back to 2 workers on the 4 GPUs left (rate 1).
  // E's work: 100 s at nominal; 10 s at rate 2 = 20 s done; 80 s left at rate 1 until P ends
  // at 20 s (10 s more done, 70 left), then back to 4 workers (rate 2): 35 s → 55 s.
  Cluster c = OneNode("H100");
  Workload e = Job(0, 2, 2, 0, 100);
  e.min_workers = 1;
  e.max_workers = 4;
  Workload p = Job(1, 1, 4, 10, 10);
  auto r = Replay(c, {e, p}, true);
  EXPECT_EQ(r.jobs[1].first_start, 10 * kSecond);
  EXPECT_EQ(r.jobs[1].finish, 20 * kSecond);
  EXPECT_EQ(r.jobs[0].finish, 55 * kSecond);
  EXPECT_EQ(r.jobs[0].preemptions, 0);
  EXPECT_GE(r.resizes, 2);
}

TEST(PolicyReplayTest, RunTimeScalesWithTheModelSpeed) {
  // 100 s at speed 1.0; the only node is an A100 at 0.5 for this job: 200 s.
  Cluster c = OneNode("A100");
  Workload w = Job(0, 1, 8, 0, 100);
  w.gpu_models = {"H100", "A100"};
  w.gpu_model_speeds = {1.0, 0.5};
  ResolveGpuModels(c.models(), w);
  auto r = Replay(c, {w}, false);
  EXPECT_EQ(r.jobs[0].finish, 200 * kSecond);
  EXPECT_DOUBLE_EQ(r.jobs[0].gpu_speed, 0.5);
}

}  // namespace
}  // namespace tessera
