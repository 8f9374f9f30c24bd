// Priority preemption: when the head of the queue cannot be placed, give it the GPUs of running
// jobs of strictly lower priority that are preemptible — the fewest such jobs, lowest priority
// first. From Borg (Verma et al., EuroSys 2015, §2.5 and §3.2: a task that does not fit
// preempts lower-priority tasks "from lowest to highest priority, until it does"), applied to
// whole gangs, with the reprieve pass of Kubernetes' scheduler (victims that turn out not to be
// needed are spared, most important first). See docs/training-jobs.md.
//
// Gangs that are already being stopped (Snapshot::releasing) count as free for the choice, so
// a preemptor that is only waiting for its victims to exit does not preempt anyone else.
#pragma once

#include <set>
#include <vector>

#include "core/cluster_state.h"
#include "core/rng.h"
#include "sched/placement/task_placer.h"
#include "sched/snapshot.h"

namespace tessera {

struct PriorityVictims {
  enum class Outcome {
    kNone,     // preempting lower-priority jobs would not make room: the job waits
    kWait,     // the job fits once the gangs being stopped are gone: preempt nobody
    kPreempt,  // preempt `victims`
  };
  Outcome outcome = Outcome::kNone;
  std::vector<const JobView*> victims;  // running jobs, in the order they were chosen
};

// Chooses victims among the running jobs of `snap` for pending `job`, skipping jobs in
// `taken` (preempted earlier in this cycle). Trial placements use a generator seeded from
// `seed`. `working` is left as it was found.
PriorityVictims ChoosePriorityVictims(const Snapshot& snap, const Workload& job,
                                      ClusterState& working, const TaskPlacer& placer,
                                      std::uint64_t seed, const std::set<JobId>& taken);

}  // namespace tessera
