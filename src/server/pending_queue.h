// The controller's pending queue, kept across scheduling cycles: one view per pending unit the
// scheduler may see (snapshot_builder.h, PendingViewsOf), in the queue policy's order, updated
// from the jobs that changed since the last cycle (ControllerState::changed_jobs) instead of
// rebuilt from every job. A cycle hands it to the scheduler as Snapshot::pending_in_order, so
// that a cycle whose head job is blocked (fifo on a full cluster) looks at a few of 100,000
// pending jobs, not all of them.
//
// Jobs whose views change without a committed change of their own are left out ("uncached")
// and built into every snapshot as before: autoscaled services (their wanted replicas), jobs
// with dependencies (met as others end), resizing jobs (their target is not durable state).
// A pending job's place in the order must not change while it waits, which holds for the
// policies that take a pre-sorted queue (fifo, backfill, srtf, srsf, las; see
// Snapshot::pending_in_order); the controller does not use one for drf or co-location.
//
// Thread-safety: none. The cycle updates it under the core's lock, and nothing changes it
// until the cycle's decisions are applied, so Schedule reads it outside the lock.
#pragma once

#include <cstdint>
#include <set>
#include <unordered_map>
#include <vector>

#include "sched/scheduler.h"
#include "server/controller_state.h"
#include "server/snapshot_builder.h"

namespace tessera {

class PendingQueue {
 public:
  // Brings the queue up to date with `state`: (re)builds the views of the jobs in `changed`
  // (ids may repeat or be gone) and of the jobs it left out before; with `all`, of every
  // active job (on first use, a new cluster, or lost change notes). `order` is the
  // scheduler's queue order. Returns the jobs whose views were (re)built or dropped.
  // REQUIRES: RefreshSchedulingWorkloads for those jobs since they last changed.
  std::vector<std::int64_t> Update(const ControllerState& state, std::vector<std::int64_t> changed,
                                   bool all, const Scheduler& order, Tick now);

  // The views in queue order (what Snapshot::pending_in_order points at).
  const std::vector<const JobView*>& in_order() const { return order_; }
  // The queued view with scheduling id `id`, or null.
  const PendingUnitView* Find(JobId id) const;
  // Whether job `id`'s pending views are (all) here; false for the jobs left out.
  bool Holds(std::int64_t id) const { return by_job_.contains(id); }
  // How many of job `id`'s pending units are queued here.
  std::size_t QueuedUnitsOf(std::int64_t id) const;
  // The active jobs left out, in id order: the snapshot builds their views each cycle.
  const std::set<std::int64_t>& uncached() const { return uncached_; }
  // Gangs with a pending unit that ran before (recovery candidates, recovery_planner.h).
  const std::set<std::int64_t>& restarted_gangs() const { return restarted_gangs_; }
  // Active elastic jobs (the running jobs a fifo cycle reads, snapshot_builder.h).
  const std::set<std::int64_t>& elastic_jobs() const { return elastic_jobs_; }
  std::size_t size() const { return units_.size(); }

 private:
  void Drop(std::int64_t id, std::vector<const JobView*>& gone);
  void Add(const ControllerState& state, std::int64_t id, const JobState& job, Tick now,
           std::vector<const JobView*>& added);

  std::unordered_map<std::uint32_t, PendingUnitView> units_;  // by scheduling id; stable
  std::unordered_map<std::int64_t, std::vector<std::uint32_t>> by_job_;
  std::vector<const JobView*> order_;
  std::set<std::int64_t> uncached_;
  std::set<std::int64_t> restarted_gangs_;
  std::set<std::int64_t> elastic_jobs_;
};

// Whether `job`'s pending views may change with no committed change of the job itself: such a
// job is built into every snapshot rather than queued.
bool ViewsChangeUncommitted(const JobState& job);

}  // namespace tessera
