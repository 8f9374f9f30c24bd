// The pure parts of live autoscaling (server/service_scaling.h): an autoscaled service's
// replicas are units of their own, the scheduling cycle sees only as many pending ones as the
// desired count leaves room for (lowest first), and a draining replica's tasks are marked so
// that the gateway leaves them out.
#include "server/service_scaling.h"

#include <gtest/gtest.h>

#include <cmath>

#include "server/snapshot_builder.h"
#include "state_fixtures.h"

namespace tessera {
namespace {

std::string ServiceYaml(int min, int max) {
  return "apiVersion: tessera/v1\nkind: InferenceService\nmetadata: {name: chat}\nspec:\n"
         "  replicas: {min: " +
         std::to_string(min) + ", max: " + std::to_string(max) +
         "}\n  gpusPerReplica: 1\n  autoscaling: {metric: queue-length, target: 4}\n"
         "  command: [tessera-engine-sim]\n";
}

std::vector<int> PendingUnitsSeen(ControllerState& state) {
  const CycleCluster cluster = BuildCycleCluster(state);
  RefreshSchedulingWorkloads(state, cluster);
  const CycleSnapshot s =
      BuildCycleSnapshot(state, cluster, 5000, 1, std::make_shared<std::uint64_t>(0));
  std::vector<int> out;
  for (const auto& u : s.units)
    if (u.phase == UnitPhase::kPending) out.push_back(u.unit);
  return out;
}

TEST(ServiceScalingTest, OneUnitPerReplicaAndOnlyTheDesiredOnesScheduled) {
  ControllerState state;
  AddNode(state, "node-0", 4);
  const auto id = AddJob(state, ServiceYaml(1, 3));
  const JobState& job = state.jobs.at(id);
  ASSERT_TRUE(IsAutoscaled(job));
  ASSERT_EQ(job.units.size(), 3u);
  // Before the autoscaler's first decision: min replicas.
  EXPECT_EQ(FreeReplicaSlots(state, job), 1);
  EXPECT_EQ(PendingUnitsSeen(state), std::vector<int>{0});
  RunUnit(state, id, 0, {{"node-0", {0}}});
  EXPECT_EQ(FreeReplicaSlots(state, job), 0);
  EXPECT_TRUE(PendingUnitsSeen(state).empty());
  // The autoscaler wants 3: units 1 and 2 are seen, lowest first.
  state.scaling[id].desired = 3;
  EXPECT_EQ(FreeReplicaSlots(state, job), 2);
  EXPECT_EQ(PendingUnitsSeen(state), (std::vector<int>{1, 2}));
}

TEST(ServiceScalingTest, AServiceWithoutAutoscalingIsOneGang) {
  ControllerState state;
  AddNode(state, "node-0", 4);
  const auto id =
      AddJob(state,
             "apiVersion: tessera/v1\nkind: InferenceService\nmetadata: {name: fixed}\nspec:\n"
             "  replicas: 2\n  gpusPerReplica: 1\n  command: [x]\n");
  const JobState& job = state.jobs.at(id);
  EXPECT_FALSE(IsAutoscaled(job));
  EXPECT_EQ(job.units.size(), 1u);
  EXPECT_GT(FreeReplicaSlots(state, job), 1000);
}

// The autoscale and liveness loops visit only the active jobs they concern (autoscaled
// services, jobs with a time limit), not every active job; a job that ends leaves both sets.
TEST(ServiceScalingTest, TheLoopsVisitOnlyActiveJobsTheyConcern) {
  ControllerState state;
  AddNode(state, "node-0", 4);
  const auto service = AddJob(state, ServiceYaml(1, 2));
  AddJob(state, BatchYaml("plain", 1));
  const auto limited =
      AddJob(state,
             "apiVersion: tessera/v1\nkind: BatchJob\nmetadata: {name: limited}\n"
             "spec: {tasks: 1, gpusPerTask: 1, timeLimitSeconds: 60, command: [x]}\n");
  EXPECT_EQ(state.autoscaled, std::set<std::int64_t>{service});
  EXPECT_EQ(state.time_limited, std::set<std::int64_t>{limited});
  ASSERT_EQ(ScaleTargets(state).size(), 1u);
  ChangeBuilder change(state);
  change.MutableJob(state.jobs.at(service)).finished_ms = 7000;
  change.MutableJob(state.jobs.at(limited)).finished_ms = 7000;
  change.Finish();
  state.Apply(change, {}, 100);
  EXPECT_TRUE(state.autoscaled.empty());
  EXPECT_TRUE(state.time_limited.empty());
  EXPECT_TRUE(ScaleTargets(state).empty());
}

TEST(ServiceScalingTest, DrainingReplicasAreMarkedAndListedWithTheirUrls) {
  ControllerState state;
  AddNode(state, "node-0", 4);
  const auto id = AddJob(state, ServiceYaml(1, 2));
  RunUnit(state, id, 0, {{"node-0", {0}}});
  RunUnit(state, id, 1, {{"node-0", {1}}});
  for (auto& [tid, t] : state.tasks) {
    t.master_port = 30000;
    t.rank = t.unit;  // as the applier sets it for independent units
  }
  state.scaling[id].desired = 1;
  state.scaling[id].draining[1] = 4000;
  const auto targets = ScaleTargets(state);
  ASSERT_EQ(targets.size(), 1u);
  EXPECT_EQ(targets[0].service, "default/chat");
  ASSERT_EQ(targets[0].replicas.size(), 2u);
  EXPECT_EQ(targets[0].replicas[0].url, "http://10.0.0.1:30000");
  EXPECT_FALSE(targets[0].replicas[0].draining);
  EXPECT_EQ(targets[0].replicas[1].url, "http://10.0.0.1:30001");
  EXPECT_TRUE(targets[0].replicas[1].draining);
  int draining = 0;
  for (const auto& [tid, t] : state.tasks) draining += IsDrainingTask(state, t);
  EXPECT_EQ(draining, 1);
  // A later attempt of the unit is not the drained one.
  state.jobs.at(id).units[1].attempt = 2;
  draining = 0;
  for (const auto& [tid, t] : state.tasks) draining += IsDrainingTask(state, t);
  EXPECT_EQ(draining, 0);
  EXPECT_EQ(ReplicaUrls(targets).at("default/chat").size(), 2u);
}

JobSpec Spec(const std::string& metric, const std::string& target) {
  auto spec = ParseJobSpec(
      "apiVersion: tessera/v1\nkind: InferenceService\nmetadata: {name: chat}\nspec:\n"
      "  replicas: {min: 0, max: 4}\n  gpusPerReplica: 1\n  slo: {ttftMs: 500}\n"
      "  autoscaling: {metric: " +
      metric + ", target: " + target + "}\n  command: [x]\n");
  EXPECT_TRUE(spec) << spec.error().message;
  return *spec;
}

// Three replicas: a (answered), b (answered), c draining; the gateway counts a only.
ScaleTarget Target() {
  ScaleTarget t;
  t.service = "default/chat";
  t.replicas = {{0, "http://a", false}, {1, "http://b", false}, {2, "http://c", true}};
  return t;
}

ServiceSignals Signals() {
  ServiceSignals s;
  s.replicas["http://a"] = {true, 3, 2, 0.5, 7.0, 1.0};
  s.replicas["http://b"] = {true, 1, 4, 0.9, std::nullopt, std::nullopt};
  s.replicas["http://c"] = {true, 9, 9, 1.0, 9.0, 9.0};
  s.awaiting_replica = 2;
  return s;
}

TEST(ServiceSampleTest, EachMetricFromTheServingReplicas) {
  const auto in_flight = ServiceSample(Spec("in-flight-requests", "4"), Target(), Signals(), 77);
  EXPECT_EQ(in_flight.at, 77);
  EXPECT_EQ(in_flight.replicas, 2);  // the draining one is left out
  // a: the gateway's 7; b: the engine's 1 + 4; plus the 2 held at the gateway.
  EXPECT_DOUBLE_EQ(in_flight.value, 7 + 5 + 2);
  EXPECT_EQ(in_flight.waiting, 2);
  const auto queue = ServiceSample(Spec("queue-length", "4"), Target(), Signals(), 77);
  EXPECT_DOUBLE_EQ(queue.value, 2 + 4 + 2);
  const auto kv = ServiceSample(Spec("kv-cache-utilization", "0.8"), Target(), Signals(), 77);
  EXPECT_DOUBLE_EQ(kv.value, 0.7);  // the mean of 0.5 and 0.9
  ServiceSignals with_ttft = Signals();
  const auto no_ttft = ServiceSample(Spec("ttft-p90", "0.8"), Target(), with_ttft, 77);
  EXPECT_EQ(no_ttft.replicas, 0);  // no request finished its prefill: nothing to say
  with_ttft.ttft_p90_ms = 600;
  const auto ttft = ServiceSample(Spec("ttft-p90", "0.8"), Target(), with_ttft, 77);
  EXPECT_EQ(ttft.replicas, 2);
  EXPECT_DOUBLE_EQ(ttft.value, 1.2);  // 600 ms against the SLO's 500
  // A replica that did not answer is not measured.
  ServiceSignals silent = Signals();
  silent.replicas["http://b"].answered = false;
  EXPECT_EQ(ServiceSample(Spec("queue-length", "4"), Target(), silent, 77).replicas, 1);
}

TEST(ServiceSampleTest, TtftP90FromTwoReadsOfTheHistogram) {
  // Cumulative buckets (seconds): 10 observations before; 20 more, 18 of them within 0.1 s.
  const std::vector<std::pair<double, double>> before = {
      {0.05, 5}, {0.1, 10}, {0.5, 10}, {INFINITY, 10}};
  const std::vector<std::pair<double, double>> now = {
      {0.05, 10}, {0.1, 28}, {0.5, 30}, {INFINITY, 30}};
  EXPECT_DOUBLE_EQ(*HistogramP90Ms(before, now), 100);
  EXPECT_FALSE(HistogramP90Ms(now, now));  // nothing observed between
  // The first read (no earlier one): everything so far; the 90th lies beyond the last bound.
  EXPECT_DOUBLE_EQ(*HistogramP90Ms({}, {{0.1, 1}, {0.5, 2}, {INFINITY, 10}}), 500);
}

}  // namespace
}  // namespace tessera
