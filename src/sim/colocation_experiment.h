// The co-location experiment (docs/colocation.md): an inference fleet whose load follows a
// daily cycle, scaled by an autoscaler, shares a cluster with a stream of offline batch tasks.
// The same scheduler runs under several setups:
//   dedicated  online and offline each on their own nodes (the fleet's share sized for its
//              peak): what a cluster without co-location does;
//   shared     one pool, online first in the queue, but nothing is ever evicted;
//   colocate   one pool with the co-location step (sched/colocation/): online evicts offline,
//              offline soaks idle capacity and, with oversell > 0, online replicas' unused GPU.
// Time advances in steps (a minute by default). Each step: offline tasks finish and arrive,
// each service's load is read from its curve; the minute is served by what runs at its start
// (the scheduler and autoscaler act on the load just measured, one step late); then the
// autoscaler sets replica counts and the scheduler runs once.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/autoscaling.h"
#include "core/cluster.h"
#include "core/colocation_config.h"
#include "core/status.h"
#include "sim/colocation_workload.h"
#include "sim/trace/trace_job.h"

namespace tessera {

struct ColocationSetup {
  enum class Mode { kDedicated, kShared, kColocate };
  std::string name;
  Mode mode = Mode::kColocate;
  ColocationConfig colocation;  // kColocate: enabled
};

struct ColocationOptions {
  // Where services and tasks come from: "openb" (LS pods as service replicas, BE pods as
  // offline tasks, from `pods`) or "fleet" (LLM serving replicas of 1–8 whole GPUs and batch
  // inference tasks of one GPU or half of one).
  std::string workload = "openb";
  Tick horizon = 24 * 60 * kMinute;
  Tick step = kMinute;
  // Simulated before the horizon and not measured, so that the fleet is up and the cluster
  // full of offline work when measuring starts.
  Tick warmup = 60 * kMinute;
  // The autoscaler's policy (docs/autoscaling.md): hpa, or kpa with Knative's default windows
  // (stable 60 s, panic 10% of it, panic threshold 200%).
  AutoscalePolicy autoscale_policy = AutoscalePolicy::kHpa;
  // The autoscaler scales down only to the most replicas wanted over this window (Kubernetes'
  // HPA default --horizontal-pod-autoscaler-downscale-stabilization: 5 min; for kpa Knative's
  // scale-down-delay, default 0).
  Tick scale_down_window = 5 * kMinute;
  // Replicas report the highest use of this window to the scheduler (the oversell credit's
  // `used`); one step = the use of the step.
  Tick usage_window = 10 * kMinute;
  double online_share = 0.5;        // the fleet's GPUs at peak (all replicas) ÷ cluster GPUs
  double offline_load = 0.8;        // offered offline GPU-time ÷ cluster GPU-time
  double target_utilisation = 0.7;  // per replica: the autoscaler's target, the SLO's limit
  double trough = 0.35;             // the daily curve's lowest load as a share of its peak
  double peak_hour = 14;            // hour of the day of the peak
  double phase_hours = 2;           // services' peaks spread uniformly over ±this
  std::vector<double> burst;        // per-minute load factors (mean 1), repeated; empty = 1
  // dedicated: the nodes of these GPU models are the online pool and the rest offline; empty:
  // of each model's nodes the first ceil(1.15 × the fleet's peak share) (SplitCluster).
  std::vector<std::string> dedicated_online_models;
  std::string placement = "fgd";
  std::uint64_t seed = 0;
  std::vector<ColocationSetup> setups;
  std::size_t series_points = 400;
};

struct ColocationRun {
  std::string name;
  std::string mode;  // dedicated | shared | colocate
  double oversell = 0;
  double slo_attainment = 0;  // served online demand ÷ online demand (docs/colocation.md)
  double slo_attainment_worst_hour = 0;
  double allocation_ratio = 0;  // time mean of (online + offline GPU milli held) ÷ capacity
  double online_allocation_ratio = 0;
  double offline_allocation_ratio = 0;  // including oversold shares
  double oversold_ratio = 0;            // offline on credit ÷ capacity
  double utilisation = 0;               // (online used + offline held) ÷ capacity
  double offline_gpu_hours_done = 0;    // work of finished offline tasks
  double offline_gpu_hours_lost = 0;    // progress lost to evictions plus eviction costs
  std::int64_t offline_tasks_submitted = 0;
  std::int64_t offline_tasks_done = 0;
  std::int64_t evictions = 0;
  std::int64_t evictions_for_online = 0;  // to place an online replica
  std::int64_t evictions_for_credit = 0;  // the online load took back oversold credit
  double offline_queue_seconds_mean = 0;  // finished tasks: first start − submit
  std::int64_t online_replica_starts = 0;
  // Running online replicas × time, and what static provisioning for every service's peak
  // (all its replicas, all the time) would have cost; both over the measured time.
  double online_replica_seconds = 0;
  double static_peak_replica_seconds = 0;
  // (seconds, value) per step, downsampled: allocation ratio, SLO attainment of the step, and
  // the online demand's GPUs at the target utilisation ÷ capacity.
  std::vector<std::pair<double, double>> allocation_series;
  std::vector<std::pair<double, double>> slo_series;
  std::vector<std::pair<double, double>> demand_series;
  double wall_seconds = 0;
};

struct ColocationResult {
  std::string workload;
  int services = 0;
  double online_peak_gpus = 0;          // all replicas of all services
  std::int64_t offline_tasks = 0;       // generated over the horizon
  double offline_mean_gpu_seconds = 0;  // per task
  std::vector<ColocationRun> runs;      // in the order of options.setups
};

// Per-minute load factors from an Azure LLM inference trace (TIMESTAMP,ContextTokens,...):
// requests per minute ÷ their mean. Fails naming the file and line.
Result<std::vector<double>> ReadMinuteLoadFactors(const std::string& path);

// The daily curve: trough + (1 − trough) × (1 + cos(2π (hour − peak_hour) / 24)) / 2.
double DiurnalLoad(double hour_of_day, double trough, double peak_hour);

// The services, their loads over the warm-up and horizon, and the offline tasks of `options`'
// workload and seed; `pods` is read only for the openb workload.
Result<ColocationWorkload> DrawColocationWorkload(const Cluster& cluster,
                                                  const std::vector<TraceJob>& pods,
                                                  const ColocationOptions& options);

// Every setup of `options` on `workload` (drawn, or read from a plan file).
Result<ColocationResult> RunColocationWorkload(const Cluster& cluster,
                                               const ColocationWorkload& workload,
                                               const ColocationOptions& options);

// DrawColocationWorkload, then RunColocationWorkload.
Result<ColocationResult> RunColocationExperiment(const Cluster& cluster,
                                                 const std::vector<TraceJob>& pods,
                                                 const ColocationOptions& options);

}  // namespace tessera
