// The recovery step of a scheduling cycle (recovery_planner.h): before the scheduler runs, the
// gangs that lost a node are recovered with their policy and their binds committed, so that the
// snapshot the scheduler then sees has them running; and the spare pool is held back from the
// scheduler's working state.
//
// Thread-safety: none; runs under ControllerCore's mutex, inside SchedulingCycle's cycle lock.
#pragma once

#include <cstdint>
#include <memory>
#include <set>

#include "sched/recovery/recovery_topology.h"
#include "server/controller_core.h"
#include "server/snapshot_builder.h"

namespace tessera {

// Refuses a spare pool that would take a whole leaf domain of the registered nodes.
Status CheckSparesFitLocked(const ControllerState& state, const ControllerOptions& options);

class RecoveryStep {
 public:
  RecoveryStep(ControllerCore& core, std::uint64_t port_salt)
      : core_(core), port_salt_(port_salt) {}

  // Recovers the candidates of `cluster` (replace, spares) and commits their binds; returns the
  // number of gangs bound. REQUIRES: mu held, RefreshSchedulingWorkloads done.
  // `jobs`: only these may be candidates (the pending queue's restarted gangs); null: any.
  int RecoverLocked(const CycleCluster& cluster, std::uint64_t seed,
                    const std::shared_ptr<std::uint64_t>& versions,
                    const std::set<std::int64_t>* jobs = nullptr);
  // Marks the spare pool unhealthy in the scheduler's working state; returns its size.
  int HoldSpares(CycleSnapshot& snapshot);

 private:
  const RecoveryTopology& TopologyOf(const CycleCluster& cluster);

  ControllerCore& core_;
  std::uint64_t port_salt_;
  RecoveryTopology topology_;
  std::uint64_t topology_generation_ = 0;
};

}  // namespace tessera
