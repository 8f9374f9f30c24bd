// Applies one cycle's decisions, computed on a snapshot outside the controller's lock, to the
// state as it is now: binds become Assigned tasks (with a rendezvous port per gang), preemptions
// stop their victims. A decision whose subject changed since the snapshot is not applied:
//  - dropped: its job was cancelled, held or purged, or its unit is no longer in the phase and
//    attempt the snapshot saw (it ended, was restarted, or is being stopped);
//  - deferred: a bind onto a node that is gone, not Ready or running strays, onto GPUs (or CPU,
//    memory) taken meanwhile, or onto GPUs a preemption or resize of this cycle frees only once
//    its processes have exited.
// A resize (kResize) of a running elastic unit stops its ranks to restart them at the new size
// (server/resize_applier.h).
// Either way the unit stays pending for a later cycle.
//
// Pure: no clock, lock or I/O; `now` and the port salt are given. Thread-safety: none; runs
// under ControllerCore's mutex.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sched/decision.h"
#include "server/change_builder.h"
#include "server/snapshot_builder.h"

namespace tessera {

// A bind or preemption as applied, for the cycle's record (cycle_record.h).
struct AppliedBind {
  std::int64_t job_id = 0;
  int unit = 0;
  int attempt = 0;
  Placement placement;  // node ids of the snapshot's cluster
};
struct AppliedPreemption {
  std::int64_t job_id = 0;  // the victim
  int unit = 0;
  std::int64_t by_job = 0;  // the job it was preempted for; 0: none known
};

struct AppliedDecisions {
  int bound = 0;
  int preempted = 0;
  int unschedulable = 0;
  int deferred = 0;
  int resized = 0;
  int dropped = 0;
  // Why each decision not applied was dropped or deferred, for the log.
  std::vector<std::string> not_applied;
  // Jobs the scheduler found can never fit, with the reason (not durable).
  std::vector<std::pair<std::int64_t, std::string>> never_fits;
  // Jobs with a unit the snapshot saw pending that stays pending (not durable); of the units in
  // snap.jobs only (those of the pending queue: decided_queued).
  std::vector<std::int64_t> waiting;
  // The job of each decided unit of the snapshot's pending queue (pending_queue.h).
  std::vector<std::int64_t> decided_queued;
  // Resizes begun, by job: kept in JobState::resize once committed (not durable).
  std::vector<std::pair<std::int64_t, ResizeTarget>> resizes;
  // The binds and preemptions applied, in decision order (the cycle's record).
  std::vector<AppliedBind> binds;
  std::vector<AppliedPreemption> preemptions;
};

// Adds the applied decisions to `change` (built over the current state). `port_salt` spreads
// rendezvous ports per controller start.
AppliedDecisions ApplyDecisions(const CycleSnapshot& snapshot, const Decisions& decisions,
                                ChangeBuilder& change, Tick now, std::uint64_t port_salt);

// Binds unit `unit` of `job` at `placement` (node ids of `cluster`), decided in an earlier
// cycle (a resize's new size, once the old ranks have exited), if it still fits now, as a bind
// decision is applied. Returns why not (nothing added), or an empty string.
std::string BindDecidedPlacement(const CycleCluster& cluster, const JobState& job, int unit,
                                 const Placement& placement, ChangeBuilder& change, Tick now,
                                 std::uint64_t port_salt);

// The rendezvous port of one attempt of a job, in 20000..31999 (below Linux's ephemeral
// range): spread by job, attempt and a salt drawn per controller start, so that two clusters
// on one machine rarely hand their jobs the same ports.
int MasterPortFor(std::int64_t job_id, int attempt, std::uint64_t salt);

}  // namespace tessera
