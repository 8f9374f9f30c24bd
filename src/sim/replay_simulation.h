// Trace replay on a queue: a discrete-event simulation with a virtual clock. Jobs arrive at
// their submit times, the scheduler (the same Scheduler the controller runs) is called once
// per instant at which something happened, bound jobs run for their durations, preempted jobs
// resume from their last checkpoint (or keep their progress when no checkpoint interval is
// set) and wait, plus a restart cost if configured. Deterministic for a seed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/cluster.h"
#include "core/status.h"
#include "core/workload.h"
#include "sched/scheduler.h"
#include "sim/queue_share_meter.h"

namespace tessera {

// A node that dies at `time` (its jobs' processes with it) and is back after `repair` (kNever:
// not within the run). As live, the scheduler learns of it `ReplayOptions::failure_detect`
// later (the heartbeat timeout): until then the node takes work, and no job with a task there
// ends (its process there is gone); they hold their GPUs until the detection restarts them.
struct NodeFailure {
  Tick time = 0;
  NodeId node;
  Tick repair = kNever;
};

// A scheduling cycle of a recorded run (a live export's, sim/live_export_replay.h): when the
// scheduler ran, and with which seed.
struct RecordedCycle {
  Tick time = 0;
  std::uint64_t seed = 0;
};

// A decision the replay applied, when ReplayOptions::record_decisions.
struct ReplayDecision {
  Tick time = 0;
  std::size_t job = 0;  // index into the jobs
  Decision::Kind kind = Decision::Kind::kBind;
  Placement placement;  // kBind, kResize: where it runs from now
  JobId preemptor;      // kPreempt: the job it was preempted for (invalid: none)
};

struct ReplayOptions {
  SchedulerConfig scheduler;
  std::uint64_t seed = 0;
  Tick restart_cost = 0;  // run time added to a job each time it is preempted
  // Checkpoint interval of jobs that do not give their own (Workload::checkpoint_interval): a
  // preempted job loses the work since its last checkpoint, taken every interval of run time
  // since it (re)started. 0 = jobs without their own interval lose nothing (an idealised
  // snapshot, the model of Tiresias' and Muri's simulators).
  Tick checkpoint_interval = 0;
  std::size_t series_points = 2000;  // samples kept per time series
  bool record_events = false;        // keep a readable event log (golden tests)
  bool record_decisions = false;     // keep every bind, preemption and resize (decisions)
  // The scheduler runs at these instants only, each with its seed, instead of at every
  // instant something happened with a seed drawn from `seed` (a recorded run's cycles, in
  // time order). Empty: the simulator's own cadence.
  std::vector<RecordedCycle> cycles;
  // Hand the scheduler the pending queue pre-sorted (Snapshot::pending_in_order). Off lists
  // every job in the snapshot each cycle, the naive way: the same decisions, slower; kept as
  // the benchmarks' baseline.
  bool presorted_queue = true;
  // Pending jobs a cycle tries after one could not start (see Snapshot); 0 = no limit.
  std::size_t max_attempts_after_block = 0;
  // A gang spread wider than its preferred topology level (Workload::topology.prefer) runs
  // slower: its run time is multiplied by the factor of the level it spans, i.e. the innermost
  // level one domain of which holds all its tasks ("node", a named level such as "leaf" or
  // "spine", or "cluster"). A level not listed, or a job that prefers nothing or spans no
  // wider than it prefers: 1.0. Defaults and their sources: docs/topology.md.
  std::vector<std::pair<std::string, double>> spread_slowdown = {
      {"leaf", 1.0}, {"spine", 1.1}, {"cluster", 1.3}};
  // Elastic jobs (SchedulerConfig::elastic): a job of nominal size n running with w workers
  // progresses at (w / n)^elastic_scaling times its nominal rate; 1 = linear (the default),
  // below 1 sub-linear. Sources: docs/elastic.md.
  double elastic_scaling = 1.0;
  // Run times are as measured (a live export's): no placement stretches them, neither the
  // spread, the GPU model's speed nor an elastic size.
  bool measured_run_times = false;
  // Node failures (the controller's requeue recovery): at detection every job with a task on
  // the node gives its GPUs back and waits in the queue again, a restart counted in
  // `recoveries`. It keeps its work up to the stop (its rank 0 checkpoints on SIGTERM), unless
  // its rank 0 was on the lost node: then only up to its last checkpoint before the failure
  // (nothing without an interval).
  std::vector<NodeFailure> node_failures;
  Tick failure_detect = 0;
};

struct JobOutcome {
  JobId id;
  std::string name;
  std::string queue;
  std::string kind;  // TrainingJob, InferenceService, ...
  double gpus = 0;
  Tick submit = 0;
  Tick first_start = -1;  // -1 = never started
  Tick finish = -1;       // -1 = not finished
  int preemptions = 0;
  double gpu_seconds_lost = 0;  // to preemptions: work since the last checkpoint + restart cost
  int resizes = 0;
  int recoveries = 0;  // restarts after a node failure
  bool unschedulable = false;
  std::string reason;  // why unschedulable
  // Where it ran last: the innermost topology level that holds all its tasks ("node", "leaf",
  // ..., "cluster"; empty = never started), how many domains of the cluster's innermost named
  // level (leaves) it spanned, and the slowdown that placement cost (spread_slowdown).
  std::string span;
  int inner_domains = 0;
  double slowdown = 1.0;
  // The relative speed of the GPU models of its last placement (Workload::gpu_model_speeds).
  // Its run time is stretched by slowdown / gpu_speed (and, for an elastic job, by its size).
  double gpu_speed = 1.0;
};

struct ReplayResult {
  std::string policy;            // queue policy
  std::string placement;         // placement policy
  bool oracle = false;           // the policy read the trace's run times
  std::vector<JobOutcome> jobs;  // in input order
  Tick first_submit = 0;
  Tick last_finish = 0;
  double allocated_gpu_seconds = 0;
  double capacity_gpu_seconds = 0;  // healthy GPU-seconds over [first_submit, last_finish]
  std::int64_t preemptions = 0;
  std::int64_t resizes = 0;      // elastic jobs grown or shrunk while running
  std::int64_t recoveries = 0;   // jobs restarted after a node failure (NodeFailure)
  double gpu_seconds_lost = 0;   // (work since last checkpoint + restart cost) × GPUs
  Tick checkpoint_interval = 0;  // ReplayOptions::checkpoint_interval
  // Every queue of the tree (the options' or one per user), with the share it received.
  std::vector<QueueShare> queues;
  std::vector<std::pair<double, double>> gpus_allocated;  // (seconds, GPUs), downsampled
  std::vector<std::pair<double, double>> queue_length;    // (seconds, pending jobs)
  std::vector<std::string> events;                        // when record_events
  std::vector<ReplayDecision> decisions;                  // when record_decisions
  std::int64_t event_count = 0;
  std::int64_t schedule_calls = 0;
  double wall_seconds = 0;
};

// REQUIRES: jobs[i].id == JobId(i), allowed_models resolved against `cluster`.
Result<ReplayResult> RunReplay(const Cluster& cluster, const std::vector<Workload>& jobs,
                               const ReplayOptions& options);

}  // namespace tessera
