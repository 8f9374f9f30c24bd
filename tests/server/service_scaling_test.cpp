// The pure parts of live autoscaling (server/service_scaling.h): an autoscaled service's
// replicas are units of their own, the scheduling cycle sees only as many pending ones as the
// desired count leaves room for (lowest first), and a draining replica's tasks are marked so
// that the gateway leaves them out.
#include "server/service_scaling.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace tessera
