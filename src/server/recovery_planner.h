// Live recovery with the simulator's policies (src/sched/recovery/): which pending gangs come
// back from a lost or drained node, and where they go. A gang whose last attempt lost a task
// (node lost, agent lost it), failed (software crash), or ran on a node that is no longer
// schedulable (cordoned, drained, lost) is a candidate. Under `replace` its healthy ranks restart
// on the nodes they ran on and the lost ranks move to free nodes near them (same leaf, same
// spine, anywhere, inside the gang's required domain); under `spares` a hot spare is taken
// first. `requeue` gangs are left to the scheduler, which places them as any pending job.
// A candidate the policy cannot place (a healthy rank's node was taken meanwhile, nothing
// near enough fits) is left to the scheduler too, so recovery never does worse than requeue.
//
// The spare pool: `spares_per_domain` idle, healthy nodes at the end (highest ids) of every
// leaf domain, chosen afresh each cycle, so a spare that was used or failed is replaced from the
// leaf's free nodes. The scheduler sees spares as unavailable; only recovery places on them.
//
// Pure: no clock, lock or I/O. Thread-safety: none; runs under ControllerCore's mutex.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/cluster_state.h"
#include "core/recovery_mode.h"
#include "core/status.h"
#include "sched/decision.h"
#include "sched/recovery/recovery_topology.h"
#include "server/controller_state.h"
#include "server/snapshot_builder.h"

namespace tessera {

struct SparePool {
  std::vector<std::uint8_t> is_spare;        // per node
  std::vector<std::vector<NodeId>> by_leaf;  // per leaf, ascending id
  int count = 0;
};

// Up to `per_domain` healthy nodes with no task at the end of each leaf of `topology`.
SparePool ChooseSpares(const RecoveryTopology& topology, const ClusterState& state, int per_domain);

// A pending gang to recover: where each rank of its last attempt ran and which ranks failed.
struct RecoveryCandidate {
  std::int64_t job_id = 0;
  int unit = 0;
  RecoveryMode mode = RecoveryMode::kReplace;
  std::shared_ptr<const Workload> workload;  // the unit's scheduling workload
  Placement placement;                       // the last attempt, in rank order
  std::vector<int> failed_ranks;             // ascending
  std::vector<std::string> failed_nodes;     // parallel to failed_ranks
};

// The pending gang units of `state` to recover under replace or spares (their spec's
// `recovery`, else `default_mode`), in job id order; with `jobs`, among those only (a caller
// that knows which jobs can be candidates spares the walk over every active job).
// REQUIRES: RefreshSchedulingWorkloads.
std::vector<RecoveryCandidate> FindRecoveryCandidates(const ControllerState& state,
                                                      const CycleCluster& cluster,
                                                      RecoveryMode default_mode,
                                                      const std::set<std::int64_t>* jobs = nullptr);

struct PlannedRecovery {
  std::int64_t job_id = 0;
  std::string message;  // the policy's decision, for the JobRecovering event
};

struct RecoveryPlan {
  Decisions binds;                      // one per recovered gang, as the scheduler's would be
  std::vector<PlannedRecovery> events;  // parallel to binds
  std::vector<std::string> left_to_scheduler;  // why, for the log
};

// Decides each candidate in order on `working` (the cycle's state: live tasks taken, nodes that
// cannot take work unhealthy), each decision seeing the nodes the previous ones took.
RecoveryPlan PlanRecoveries(const std::vector<RecoveryCandidate>& candidates,
                            const ClusterState& working, const CycleCluster& cluster,
                            const RecoveryTopology& topology, int spares_per_domain);

}  // namespace tessera
