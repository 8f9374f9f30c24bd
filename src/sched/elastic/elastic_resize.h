// Elastic TrainingJobs: a job with Workload::min_workers..max_workers runs with any number of
// workers in that range. The scheduler starts it at its nominal size (groups[0].count, the
// spec's `workers`) or, when that does not fit, at its minimum; grows it into GPUs left idle
// once every pending job that fits has been placed; and shrinks it (down to its minimum)
// rather than preempting it, or to let a blocked head job start. A resize keeps ranks 0..k-1
// where they are: growth appends ranks, shrinking drops the highest. Decision::kResize carries
// the new placement. See docs/elastic.md.
#pragma once

#include <optional>

#include "core/cluster_state.h"
#include "core/placement.h"
#include "core/rng.h"
#include "core/workload.h"
#include "sched/placement/task_placer.h"

namespace tessera {

// True for a job of one task group with 0 < min_workers <= max_workers.
bool IsElastic(const Workload& job);
int MinWorkers(const Workload& job);  // REQUIRES: IsElastic(job)
int MaxWorkers(const Workload& job);  // at least the nominal size

// `job` with `workers` workers in its one group (to place it at another size).
Workload WithWorkers(const Workload& job, int workers);

// Adds workers to `current` (the job's applied placement) one at a time, up to MaxWorkers (or
// `max_workers` when it is smaller and above 0), on
// nodes inside the domain that already holds all of it (its span level), so that growing never
// spreads the job wider. Takes their resources in `state`. Returns the grown placement, or
// nullopt when not one worker could be added. Ties are drawn from the job's own stream
// (TaskPlacer::DrawsFor), as its placement's are.
std::optional<Placement> GrowElastic(ClusterState& state, const Workload& job,
                                     const Placement& current, const TaskPlacer& placer,
                                     int max_workers = 0);

// Gives back the ranks from `workers` on (REQUIRES: current is applied in `state`) and returns
// the ranks kept.
Placement ShrinkElastic(ClusterState& state, const Placement& current, int workers);

// Applies the longest prefix of `p` that fits `state` now, of at least `min` tasks; returns it
// (nothing applied and nullopt when not even `min` fit). The shrink that spares a job whose
// GPUs were taken by the queue order from preemption.
std::optional<Placement> ApplyLongestPrefix(ClusterState& state, const Placement& p, int min);

}  // namespace tessera
