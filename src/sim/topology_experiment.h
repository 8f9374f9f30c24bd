// Topology-aware against topology-unaware gang placement on one trace: the same jobs replayed
// once per gang placement ("topology", "greedy"), with the replay's spread slowdown, and for
// each job size class the share of gangs kept within their preferred and required levels, the
// leaves they span against the fewest possible, their slowdown, JCT and queueing delay.
// `tessera bench topology` runs it; docs/results.md §3 reports it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/cluster.h"
#include "core/status.h"
#include "core/workload.h"

namespace tessera {

// One scheduler configuration to compare, named by its variant string (ParsePolicyVariant).
struct PolicyVariant {
  std::string name;
  std::string queue_policy = "backfill";
  std::string gang_placement = "topology";
  std::string backfill_reservation = "domain";
  bool elastic = false;
  std::string gpu_model_choice = "fastest";
};

// "BASE[+MOD...]": BASE is fifo, easy (backfill counting GPUs cluster-wide), domain (backfill
// with a domain reservation) or another queue policy (srtf, las, ...); MOD is elastic (resize
// elastic jobs), blind (model-blind GPU choice) or greedy (topology-blind gang placement).
Result<PolicyVariant> ParsePolicyVariant(const std::string& name);

struct TopologyExperimentOptions {
  std::string queue_policy = "backfill";
  std::string placement_policy = "bestfit";
  std::vector<std::string> gang_placements = {"topology", "greedy"};
  std::uint64_t seed = 1;
  // As Slurm's bf_max_job_test: pending jobs a cycle tries once the head is blocked.
  std::size_t max_attempts_after_block = 500;
  // Empty: ReplayOptions' defaults.
  std::vector<std::pair<std::string, double>> spread_slowdown;
  // With gang_placements: SchedulerConfig::backfill_reservation (docs/backfill.md).
  std::string backfill_reservation = "domain";
  // When not empty, the rows are these variants (queue_policy and gang_placements unused).
  std::vector<PolicyVariant> variants;
  double elastic_scaling = 1.0;  // ReplayOptions::elastic_scaling
};

struct TopologyClassStats {
  std::string name;  // e.g. "pretrain (>= 256 GPUs)"
  std::int64_t jobs = 0;
  std::int64_t started = 0;
  std::int64_t with_prefer = 0;  // started jobs that name a preferred level
  double within_preferred = 0;   // share of those spanning no wider than it
  std::int64_t with_require = 0;
  double within_required = 0;  // share of started jobs with require that honour it
  double mean_slowdown = 1;
  double slowed = 0;                  // share of started jobs with slowdown > 1
  double mean_inner_domains = 0;      // leaves spanned (innermost named level)
  double mean_min_inner_domains = 0;  // the fewest leaves that could hold them
  double jct_mean_s = 0, jct_p50_s = 0, jct_p95_s = 0;
  double queue_mean_s = 0, queue_p95_s = 0;
  double mean_gpu_speed = 1;  // relative speed of the models they ran on (last placement)
};

struct TopologyExperimentRow {
  std::string gang_placement;
  std::vector<TopologyClassStats> classes;  // by size class, then "all"
  double makespan_s = 0;
  double gpu_allocation = 0;
  std::int64_t unschedulable = 0;
  std::int64_t resizes = 0;
  double wall_seconds = 0;
};

// REQUIRES: jobs[i].id == JobId(i).
Result<std::vector<TopologyExperimentRow>> RunTopologyExperiment(
    const Cluster& cluster, const std::vector<Workload>& jobs,
    const TopologyExperimentOptions& options);

nlohmann::json TopologyExperimentJson(const TopologyExperimentOptions& options,
                                      const std::vector<TopologyExperimentRow>& rows);

}  // namespace tessera
