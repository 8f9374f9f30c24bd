// One scheduling cycle of the controller, on the real clock:
//   1. under the core's lock: refresh the cluster and the scheduling workloads of the jobs
//      that changed, bring the long-lived pending queue up to date with them (pending_queue.h),
//      and the live tasks' working state with the tasks that changed (live_task_index.h),
//      recover the gangs that lost a node with their recovery policy (recovery_step.h), and
//      take a snapshot (snapshot_builder.h) of the running units with the queue in it, the
//      spare pool held back from it;
//   2. without the lock: run the long-lived Scheduler on it (live_scheduler.h), so the API and
//      the agents are answered meanwhile;
//   3. under the lock again: apply the decisions to the state as it is then, dropping or
//      deferring those whose jobs, units, nodes or GPUs changed (decision_applier.h), and
//      commit them in one change with a SchedulingCycle event that records the cycle's clock,
//      seed and decisions (cycle_record.h), so the cycle can be replayed.
//
// Thread-safety: Run is thread-safe; cycles run one at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>

#include "server/controller_core.h"
#include "server/decision_applier.h"
#include "server/live_scheduler.h"
#include "server/live_task_index.h"
#include "server/pending_queue.h"
#include "server/recovery_step.h"
#include "server/snapshot_builder.h"

namespace tessera {

class SchedulingCycle {
 public:
  // `port_salt` spreads rendezvous ports per controller start.
  SchedulingCycle(ControllerCore& core, std::uint64_t port_salt);

  // Runs one cycle; returns the number of units bound.
  int Run();
  // How long the last cycle held the core's lock (snapshot and apply together).
  std::chrono::steady_clock::duration last_locked() const { return last_locked_; }

 private:
  // Step 1; nullopt when there is nothing to schedule or the scheduler cannot run.
  // REQUIRES: mu held.
  std::optional<CycleSnapshot> SnapshotLocked(const Scheduler** scheduler);
  // Step 3. REQUIRES: mu held.
  int ApplyLocked(const CycleSnapshot& snapshot, const Decisions& decisions);
  // Takes the jobs changed since the last call into the pending queue (and their workloads).
  // REQUIRES: mu held, use_queue_.
  void TakeChangesLocked(const Scheduler& scheduler, bool all);
  // The run seed (tesserad --seed): the placement's draw seed, as the simulator's --seed.
  std::uint64_t RunSeed() const { return core_.options().scheduler.placement.draw_seed; }
  // JobState::waiting after a cycle's decisions. REQUIRES: mu held.
  void MarkWaitingLocked(const AppliedDecisions& applied);

  ControllerCore& core_;
  std::uint64_t port_salt_;
  std::mutex cycle_mu_;  // one cycle at a time; held across the three steps
  LiveScheduler scheduler_;
  RecoveryStep recovery_;  // gangs that lost a node, before the scheduler runs; the spare pool
  CycleCluster cluster_;
  // The pending queue across cycles, for the queue policies that take one presorted (not drf,
  // not with co-location): use_queue_.
  bool use_queue_ = false;
  bool queue_built_ = false;  // the queue is up to date but for state.changed_jobs
  PendingQueue queue_;
  LiveTaskIndex live_tasks_;                  // with the queue: the working state across cycles
  std::vector<std::int64_t> queue_touched_;   // jobs whose queued views changed this cycle
  std::vector<std::int64_t> decided_before_;  // jobs with queued units decided last cycle
  std::vector<std::int64_t> waiting_before_;  // jobs marked waiting from snap.jobs last cycle
  std::shared_ptr<std::uint64_t> versions_ = std::make_shared<std::uint64_t>(0);
  std::chrono::steady_clock::duration last_locked_{};
};

}  // namespace tessera
