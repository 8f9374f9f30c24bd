// The scheduler's input: the jobs that are pending or running, with what the policies may know
// about each, at one instant. The simulator and the controller each build one and hand it,
// with a working copy of the cluster state, to Scheduler::Schedule.
#pragma once

#include <cstdint>
#include <vector>

#include "core/placement.h"
#include "core/time.h"
#include "core/workload.h"

namespace tessera {

enum class JobPhase { kPending, kRunning };

struct JobView {
  const Workload* job = nullptr;
  JobPhase phase = JobPhase::kPending;
  Placement placement;            // kRunning: where it runs now
  Tick started = 0;               // kRunning: when this run began
  double attained_gpu_seconds = 0;  // GPU-time received so far, over all runs (LAS)
  Tick remaining = 0;             // estimated run time left at full size; 0 = unknown
  Tick last_checkpoint = 0;       // time of the last checkpoint (or of the start)
  // Co-location (sched/colocation/): for a running online replica, the GPU milli it uses now
  // on each of its GPUs (load model or monitoring), -1 = as much as it requested; for a running
  // offline task, whether it sits on online replicas' oversold credit (its GPU share is then
  // not in ClusterState, see ChargedPlacement).
  std::int32_t used_gpu_milli = -1;
  bool oversold = false;
};

struct Snapshot {
  std::vector<JobView> jobs;  // any order; policies impose their own, with ties by job id
  Tick now = 0;
  std::uint64_t seed = 0;     // the only source of randomness a policy may use
  // Optional: more pending jobs, already in the queue policy's order (by priority, key,
  // submit time, job id; a pending job's key does not change while it waits). A caller that
  // keeps its queue sorted passes it here and only the running jobs in `jobs`, so that a
  // cycle costs O(running + jobs looked at) rather than O(all jobs).
  const std::vector<const JobView*>* pending_in_order = nullptr;
  // The most pending jobs a cycle tries to start after one has failed to (backfill and
  // preemptive re-plans), as Slurm's bf_max_job_test bounds its backfill scan. 0 = no limit.
  std::size_t max_attempts_after_block = 0;
  // Placements of gangs being stopped (preempted, cancelled, restarting): their resources are
  // still taken in the working state until their processes are gone (the controller), but
  // will be free soon. Priority preemption counts them as free so that a preemptor waiting
  // for its victims to exit preempts nobody else. The simulator frees at once: empty there.
  std::vector<Placement> releasing;
};

}  // namespace tessera
