// The live tasks as the scheduler sees them, kept across scheduling cycles: a ClusterState with
// every live task's resources taken (an oversold task's CPU and memory only, ChargedPlacement)
// and each running or stopping unit's placement in rank order, updated from the tasks of the
// jobs that changed since the last cycle (ControllerState::changed_jobs: a task's change is
// its job's) instead of rebuilt from every task. A cycle copies the state (O(nodes), no task
// is looked at) and marks unschedulable nodes unhealthy on the copy.
//
// Rebuilt whole on a new cluster (a node added or reshaped) or when change notes were lost.
// Thread-safety: none; the scheduling cycle updates it under the core's lock.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/cluster_state.h"
#include "server/controller_state.h"
#include "server/snapshot_builder.h"

namespace tessera {

class LiveTaskIndex {
 public:
  // Takes the tasks of the jobs in `changed` (ids may repeat or be gone) again; with `all`, or
  // when `cluster` is not the one it was built for, every live task afresh. `versions`: the
  // node-version source of the cycle's states (core/cluster_state.h).
  void Update(const ControllerState& state, const CycleCluster& cluster,
              std::vector<std::int64_t> changed, bool all,
              const std::shared_ptr<std::uint64_t>& versions);

  // The cluster with every live task taken; no node marked unhealthy.
  const ClusterState& taken() const { return *taken_; }
  // Each unit with live tasks: its placement, rank i at index i.
  const UnitPlacements& placements() const { return placements_; }
  // Units with a task on online replicas' oversold credit (co-location).
  const std::set<UnitKey>& oversold() const { return oversold_; }
  // The live tasks of each unit.
  const std::map<UnitKey, std::vector<std::int64_t>>& unit_tasks() const { return unit_tasks_; }
  // Live tasks that did not fit their node (an inconsistent state), for the log.
  std::vector<std::string> Problems() const;

 private:
  struct Taken {
    UnitKey unit;
    int rank = 0;
    NodeId node;
    TaskPlacement placement;
    bool oversold = false;
    bool applied = false;  // false: did not fit its node
  };
  void Take(const ControllerState& state, const CycleCluster& cluster, std::int64_t id);
  void Give(std::int64_t id);
  void Rebuild(const ControllerState& state, const CycleCluster& cluster,
               const std::shared_ptr<std::uint64_t>& versions);
  void RefreshUnit(const UnitKey& unit);

  std::uint64_t generation_ = 0;  // of the cluster it was built for
  std::unique_ptr<ClusterState> taken_;
  std::unordered_map<std::int64_t, Taken> tasks_;
  std::unordered_map<std::int64_t, std::vector<std::int64_t>> by_job_;  // the tasks taken
  // Per unit, its tasks by (rank, node id, task id): the order a walk over the nodes in name
  // order (node ids follow names) and a stable sort by rank gives.
  std::map<UnitKey, std::set<std::tuple<int, std::uint32_t, std::int64_t>>> ranks_;
  UnitPlacements placements_;
  std::set<UnitKey> oversold_;
  std::map<UnitKey, std::vector<std::int64_t>> unit_tasks_;
  std::set<std::int64_t> unfit_;  // task ids that did not fit; tried again on each update
  std::set<UnitKey> dirty_;       // units whose tasks changed in this update
};

}  // namespace tessera
