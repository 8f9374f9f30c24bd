// Synthetic job traces for clusters no public trace describes, starting with the 10,000-GPU LLM
// cluster (`llm-10k`: 1,250 nodes × 8 GPUs, leaves of 32 nodes, spines of 8 leaves). The mix
// (pretraining gangs, fine-tuning, evaluation, batch inference across 20 teams) is calibrated
// on published characterisations; docs/workload-generator.md gives every number and its source.
// Deterministic: the same options give the same trace, byte for byte, on every platform that
// has IEEE doubles and a correctly rounded libm (one seeded Rng; no global state).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "sim/trace/trace_job.h"

namespace tessera {

struct WorkloadGenOptions {
  std::string preset = "llm-10k";  // see WorkloadPresetNames()
  int jobs = 10'000;               // jobs in the trace, 1..10,000,000
  double days = 7;                 // arrivals spread over [0, days), 0 < days <= 3650
  std::uint64_t seed = 1;
};

// One kind of job in a preset's mix.
struct JobClassSpec {
  std::string name;       // id prefix: pretrain, finetune, eval, infer
  double share = 0;       // of jobs (by count); a preset's shares sum to 1
  std::vector<int> gpus;  // sizes, drawn with `gpu_weights`
  std::vector<double> gpu_weights;
  Tick median_duration = 0;  // log-normal run time: median and sigma of ln(duration)
  double sigma = 1;
  Tick min_duration = 0;  // draws are clipped to [min, max]
  Tick max_duration = 0;
  bool diurnal = true;  // arrivals follow the working day (pretraining does not)
  int teams = 20;       // drawn from the first `teams` teams (Zipf)
  // Topology constraints by size: gangs up to `require_up_to` GPUs get `require`; every job of
  // the class larger than one node gets `prefer`; larger gangs get `prefer_beyond`.
  std::string require;
  int require_up_to = 0;
  std::string prefer;
  std::string prefer_beyond;
};

struct WorkloadPreset {
  std::string name;
  std::string description;
  int gpus_per_node = 8;
  int teams = 20;
  double team_zipf = 1.0;  // team k (0-based) is drawn with weight 1 / (k + 1)^team_zipf
  std::vector<JobClassSpec> classes;
};

std::vector<std::string> WorkloadPresetNames();
Result<WorkloadPreset> FindWorkloadPreset(const std::string& name);

// The jobs of a generated trace, in submit order, ids "<class>-<n>" numbered in that order.
// TraceJob fields: id, submit, duration, gpus (whole), gpu_milli, user (the team), gpu_models
// (empty: any), require, prefer. Fails naming the option when one is out of range.
Result<std::vector<TraceJob>> GenerateWorkload(const WorkloadGenOptions& options);

// The jobs as a generic CSV trace (docs/traces.md), with the topology columns:
// id,submit_time,gpus,duration,user,gpu_model,require,prefer. Times in whole seconds.
std::string ToGenericCsv(const std::vector<TraceJob>& jobs);

// Per class: jobs, share of jobs and share of GPU-time (gpus × duration), as measured on
// `jobs`; and the offered load on a cluster of `cluster_gpus` over `days`.
struct WorkloadMix {
  struct Class {
    std::string name;
    std::int64_t jobs = 0;
    double job_share = 0;
    double gpu_time_share = 0;
    double median_gpus = 0;
    double median_hours = 0;
  };
  std::vector<Class> classes;
  double gpu_hours = 0;
  double offered_load = 0;  // gpu_hours / (cluster_gpus × 24 × days)
};
WorkloadMix MeasureWorkloadMix(const std::vector<TraceJob>& jobs, std::int64_t cluster_gpus,
                               double days);

}  // namespace tessera
