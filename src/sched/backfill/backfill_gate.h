// Backfill once the head job is blocked: which later jobs may start now without delaying it.
//
// Two reservations, chosen by SchedulerConfig::backfill_reservation:
//  - "domain" (default): the head gang gets a reservation on concrete GPUs in one domain of its
//    required topology level — the earliest expected end of running jobs after which the gang
//    placer can place it, and the placement it would get then (ReserveEarliest). A later job
//    may start if, by estimate, it ends before the reservation starts, or if it is placed on
//    no node of the reservation. With exact estimates the head's start is never delayed.
//  - "gpu-count": EASY backfilling as Lifka (1995) and Slurm's sched/backfill describe it for
//    a flat machine: the shadow time is when enough GPUs, counted cluster-wide, will have been
//    released; a later job may start if it ends by then or fits in the GPUs left over. Blind to
//    where the GPUs are, so a topology-constrained gang may be delayed; kept as the baseline.
// See docs/backfill.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/cluster_state.h"
#include "core/placement.h"
#include "core/rng.h"
#include "core/time.h"
#include "core/workload.h"
#include "sched/placement/task_placer.h"

namespace tessera {

// A running job's (or a job bound this cycle) expected end and the resources it gives back.
struct ExpectedEnd {
  Tick end = kNever;  // kNever: unknown
  const Placement* placement = nullptr;
  std::int64_t gpu_milli = 0;
};

struct Reservation {
  Tick start = kNever;        // kNever: no estimate says when the job can start
  Placement placement;        // where it would start then, in rank order
  std::vector<NodeId> nodes;  // the distinct nodes of `placement`, ascending
};

// The earliest end in `ends` after which (releasing every placement that ended by then from a
// copy of `state`) `placer` can place `job`, and that placement. Feasibility only grows as
// more jobs end, so the earliest instant is found by binary search over the distinct end
// times: O(log n) placements. Start `now` when the job fits already. Pure: `state` is not
// changed; `rng` is consumed deterministically.
Reservation ReserveEarliest(const ClusterState& state, const Workload& job,
                            std::vector<ExpectedEnd> ends, Tick now, const TaskPlacer& placer,
                            Rng& rng);

enum class BackfillReservation { kDomain, kGpuCount };
std::optional<BackfillReservation> ParseBackfillReservation(const std::string& name);

class BackfillGate {
 public:
  BackfillGate(BackfillReservation kind, const TaskPlacer& placer) : kind_(kind), placer_(placer) {}

  // The head job `head` could not be placed on `state` at `now`; `ends` are the expected ends
  // of the running jobs and of the jobs bound earlier in this cycle.
  void Block(const ClusterState& state, const Workload& head, std::vector<ExpectedEnd> ends,
             Tick now, Rng& rng);

  // Tries to start `job`, whose run time is estimated at `estimate` (0 = unknown), without
  // delaying the head; on success takes its resources in `state` and returns the placement.
  std::optional<Placement> TryStart(ClusterState& state, const Workload& job, Tick estimate,
                                    Tick now, Rng& rng);

  const Reservation& reservation() const { return reservation_; }

  // Makes the reserved nodes unavailable in `state` (for placing something that must not
  // touch them), and gives them back exactly as they were.
  void Fence(ClusterState& state);
  void Unfence(ClusterState& state);

 private:
  BackfillReservation kind_;
  const TaskPlacer& placer_;
  Reservation reservation_;
  std::int64_t spare_at_shadow_ = 0;  // kGpuCount
  std::vector<NodeId> fenced_;        // scratch: reserved nodes made unavailable for a try
};

}  // namespace tessera
