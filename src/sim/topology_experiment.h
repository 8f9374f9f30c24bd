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

struct TopologyExperimentOptions {
  std::string queue_policy = "backfill";
  std::string placement_policy = "bestfit";
  std::vector<std::string> gang_placements = {"topology", "greedy"};
  std::uint64_t seed = 1;
  // As Slurm's bf_max_job_test: pending jobs a cycle tries once the head is blocked.
  std::size_t max_attempts_after_block = 500;
  // Empty: ReplayOptions' defaults.
  std::vector<std::pair<std::string, double>> spread_slowdown;
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
  double queue_mean_s = 0;
};

struct TopologyExperimentRow {
  std::string gang_placement;
  std::vector<TopologyClassStats> classes;  // by size class, then "all"
  double makespan_s = 0;
  double gpu_allocation = 0;
  std::int64_t unschedulable = 0;
  double wall_seconds = 0;
};

// REQUIRES: jobs[i].id == JobId(i).
Result<std::vector<TopologyExperimentRow>> RunTopologyExperiment(
    const Cluster& cluster, const std::vector<Workload>& jobs,
    const TopologyExperimentOptions& options);

nlohmann::json TopologyExperimentJson(const TopologyExperimentOptions& options,
                                      const std::vector<TopologyExperimentRow>& rows);

}  // namespace tessera
