// The failures experiment: one (or a few) large training gangs on a big cluster, struck by
// failures drawn from a failure model (or replayed from a failure file), recovering under each
// recovery policy in turn. A discrete-event simulation on a virtual clock whose events are the
// failures, repairs, failure detection, restarts and checkpoints, so a 30-day run of a
// 16,384-GPU job is a few thousand events and takes milliseconds.
//
// Job model: a gang of whole-node workers checkpoints every `checkpoint_interval` of compute,
// stalling `checkpoint_cost` each time. A failure of any of its GPUs, nodes, NICs or leaf
// switches (or a software crash on one of its nodes) stops the whole gang; the work since the
// last completed checkpoint is lost. The failure is noticed after `detect`; the recovery policy
// decides (requeue, replace, spares, shrink; "+drain" adds the drain rule); new nodes start
// cold (`cold_start`), hot spares warm; every restart then costs `restart` (checkpoint reload,
// process start, NCCL init). A failed node comes back after its repair time.
//
// Figures (docs/failures.md): ETTR = productive training time ÷ wall time since first start,
// per job and overall (GPU-weighted); GPU-hours lost to redone work and to idle time during
// recovery; recovery latency (failure to restart); a sweep of the checkpoint interval next to
// the Young/Daly estimate sqrt(2 · checkpoint_cost · MTBF). Same inputs and seed, same result.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/cluster.h"
#include "core/status.h"
#include "core/time.h"
#include "sched/recovery/recovery_policy.h"
#include "sched/recovery/recovery_topology.h"
#include "sim/failures/failure_model.h"

namespace tessera {

struct FailuresOptions {
  std::vector<int> job_gpus = {16384};  // one gang per entry; whole nodes per worker
  Tick horizon = 30 * kDay;             // wall time simulated
  // Compute time between checkpoints; 0 = each job's Young/Daly interval sqrt(2·δ·MTBF).
  Tick checkpoint_interval = 0;
  Tick checkpoint_cost = 5 * kSecond;  // δ: training stalls this long per checkpoint
  Tick restart = 180 * kSecond;        // every restart: checkpoint reload, processes, NCCL init
  Tick detect = 60 * kSecond;          // failure → noticed (heartbeats, NCCL watchdog)
  Tick cold_start = 300 * kSecond;     // nodes new to the job: placement, image, container
  Tick cold_start_per_node = 50;       // ms more per cold node: image pulls contend
  Tick warm_start = 0;                 // a hot spare: already pulled and running
  int spares_per_leaf = 1;             // spares policy: hot spares kept per leaf
  int max_spares = -1;                 // spares policy: cap on the pool; -1 = none
  std::vector<std::string> policies = {"requeue", "replace", "spares"};  // "+drain" allowed
  RecoveryConfig recovery;
  DrainRule drain;                // the rule "+drain" adds
  Tick drain_repair = 14 * kDay;  // a drained node's deep repair; it comes back fixed
  RecoveryTopologyOptions topology;
  std::uint64_t seed = 0;
  int seeds = 1;  // failure draws per policy (a failure file is replayed once)
  // Checkpoint intervals tried, as multiples of the Young/Daly interval; empty = no sweep.
  std::vector<double> sweep_factors = {0.25, 0.5, 0.71, 1, 1.41, 2, 4};
  std::size_t timeline_limit = 2000;  // entries of the timeline kept per policy
  bool record_log = false;            // a readable event log (tests)
};

// Where failures come from: a model (drawn anew per seed) or a failure file (replayed as is).
struct FailureSource {
  std::string spec;                   // what the user passed
  std::optional<FailureModel> model;  // preset or YAML
  std::vector<FailureEvent> events;   // failure file
  FailureModel repairs;  // mean repair times for file events that give none ("llama3"'s)
};

// A preset name, a .yaml/.yml model, or a failure file (CSV). Errors name the file, line, field.
Result<FailureSource> LoadFailureSource(const std::string& spec, const Cluster& cluster,
                                        const RecoveryTopology& topology, Tick horizon);

struct TimelineEntry {
  Tick time = 0;
  std::string event;  // failure | recover | restart | wait | drain | grow | failure-in-recovery
  std::string job;
  std::string component;
  std::string target;
  double lost_seconds = -1;     // failure: training progress lost (seconds at full size)
  double latency_seconds = -1;  // restart: failure to restart
  std::string detail;
};

struct FailuresJobResult {
  std::string name;
  int gpus = 0;
  double ettr = 0;
  double progress_hours = 0;
  int interruptions = 0;
  Tick checkpoint_interval = 0;
};

// One policy, one failure draw, one checkpoint interval.
struct FailuresRun {
  std::string policy;
  double ettr = 0;  // GPU-weighted over jobs
  std::vector<FailuresJobResult> jobs;
  // GPU-hours: productive + redone + checkpoint + recovery idle + shrunk = GPUs × wall time.
  double productive_gpu_hours = 0;
  double redone_gpu_hours = 0;         // work lost since the last checkpoint, done again
  double recovery_idle_gpu_hours = 0;  // the job's GPUs from failure to restart
  double checkpoint_gpu_hours = 0;     // stalled writing checkpoints
  double shrunk_gpu_hours = 0;         // capacity missing while running shrunk
  double spare_idle_gpu_hours = 0;     // hot spares waiting (a cost outside the job)
  std::vector<double> recovery_seconds;
  std::int64_t failures = 0;          // failures applied anywhere in the cluster
  std::int64_t failures_ignored = 0;  // on parts already out of service
  std::int64_t job_failures = 0;      // failures that hit a job (incl. during recovery)
  std::int64_t interruptions = 0;     // episodes: a running job stopped
  std::int64_t requeues = 0, replacements = 0, replacements_off_leaf = 0, spares_used = 0;
  std::int64_t restarts_in_place = 0, shrinks = 0, grows = 0, waits = 0, drained = 0;
  std::int64_t unfinished_recoveries = 0;  // still recovering at the end of the run
  int spares_initial = 0;
  std::vector<TimelineEntry> timeline;
  bool timeline_truncated = false;
  std::vector<std::pair<double, double>> progress;  // (seconds, hours of training), GPU-weighted
  std::vector<std::string> log;
};

// One run. `policy` is a registered name, optionally with "+drain". `repairs` gives the mean
// repair time of events that carry none. `checkpoint_intervals` has one entry per job; empty =
// options.checkpoint_interval for every job. REQUIRES: events sorted by time; every interval > 0.
Result<FailuresRun> SimulateFailures(const Cluster& cluster, const RecoveryTopology& topology,
                                     const std::vector<FailureEvent>& events,
                                     const FailureModel& repairs, const FailuresOptions& options,
                                     const std::string& policy,
                                     const std::vector<Tick>& checkpoint_intervals = {});

struct FailuresPolicyResult {
  std::string policy;
  int seeds = 0;
  double ettr = 0, ettr_min = 0, ettr_max = 0;  // over seeds
  FailuresRun total;  // counters and GPU-hours summed over seeds; latencies pooled
  FailuresRun first;  // the first seed's run: timeline and progress series
  std::vector<std::pair<Tick, double>> sweep;  // (checkpoint interval of job 0, mean ETTR)
  Tick best_interval = 0;
};

struct FailuresResult {
  FailureSource source;
  double job_mtbf_seconds = 0;      // job 0: from the model, or observed in the file
  Tick young_daly_interval = 0;     // job 0
  Tick checkpoint_interval = 0;     // job 0, as run
  std::int64_t failure_events = 0;  // first seed's schedule
  std::int64_t lemons = 0;
  std::vector<FailuresPolicyResult> policies;
  double wall_seconds = 0;
};

Result<FailuresResult> RunFailuresExperiment(const Cluster& cluster, const FailureSource& source,
                                             const FailuresOptions& options);

}  // namespace tessera
