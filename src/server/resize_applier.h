// Live resizes of elastic TrainingJobs (docs/elastic.md). The scheduler's kResize gives a
// running elastic unit a new placement (ranks 0..k-1 stay where they are). Live, every rank
// restarts at the new WORLD_SIZE from the job's checkpoint, as torchrun's elastic agent restarts
// its workers on a membership change:
//  1. BeginResize, in the cycle that decided it: every rank gets SIGTERM with the grace period
//     (the program checkpoints and exits); the unit stops towards Pending; the target is kept.
//  2. Until it is bound again the unit is hidden from the scheduler (IsResizing), the target's
//     GPUs count as taken (TakeResizeTargets: nobody else gets the GPUs a grow was given) and
//     only the ranks it drops count as soon free (DroppedRanks).
//  3. StartResizedUnitsLocked, before each cycle's snapshot: a unit whose old ranks have all
//     exited is bound at its target, a new attempt that is not a restart. If the target no
//     longer fits (a node was lost meanwhile), it is dropped and the scheduler places the unit
//     afresh.
//
// Thread-safety: none; everything runs under ControllerCore's mutex.
#pragma once

#include <cstdint>
#include <optional>

#include "core/cluster_state.h"
#include "server/change_builder.h"
#include "server/controller_core.h"
#include "server/snapshot_builder.h"

namespace tessera {

// Starts resizing unit `unit` of `job` (running at `from`) to `to`, both over `cluster`; returns
// the target to keep in JobState::resize once the change is committed, or nullopt when `to` is
// where it runs (nothing to do).
std::optional<ResizeTarget> BeginResize(ChangeBuilder& change, const JobState& job, int unit,
                                        const Placement& from, const Placement& to,
                                        const CycleCluster& cluster, Tick now);

// Keeps the targets of committed resizes (AppliedDecisions::resizes).
void KeepResizeTargets(ControllerState& state,
                       std::vector<std::pair<std::int64_t, ResizeTarget>> resizes);

// Whether unit `unit` of `job` is being resized, so hidden from the scheduler.
bool IsResizing(const JobState& job, int unit);

// Takes, in `working`, the GPUs of every resize target that its old ranks do not hold yet.
void TakeResizeTargets(const ControllerState& state, const CycleCluster& cluster,
                       ClusterState& working);

// The ranks of `old` (a resizing unit's placement) that its target drops: free once its
// processes are gone.
Placement DroppedRanks(const ResizeTarget& target, const Placement& old,
                       const CycleCluster& cluster);

// Binds every resizing unit whose old ranks have all exited at its target, one commit each.
void StartResizedUnitsLocked(ControllerCore& core, const CycleCluster& cluster,
                             std::uint64_t port_salt);

// The workers of `task`'s attempt: an elastic job's WORLD_SIZE follows its current size.
int AttemptWorkers(const ControllerState& state, const JobState& job, const TaskRecord& task);

}  // namespace tessera
