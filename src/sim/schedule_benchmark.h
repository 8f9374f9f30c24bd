// The scheduler's speed at the 10,000-GPU scale, for `tessera bench schedule` and
// bench/schedule_bench.cpp: a cluster of spines and leaves (as
// examples/config/clusters/llm-10k.yaml), a queue of pending single-GPU jobs, and a large gang with
// a required spine and a preferred leaf. Every figure is measured against a baseline in the same
// process (the plain scan over every node, with the same decisions; the gang also placed task by
// task), so the ratio holds on any machine. Single-threaded: one core. See docs/benchmarks.md.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/status.h"
#include "core/workload.h"

namespace tessera {

struct ScheduleBenchOptions {
  int nodes = 1250;
  int gpus_per_node = 8;
  int nodes_per_leaf = 32;
  int leaves_per_spine = 8;
  int pending = 100'000;         // pending single-GPU jobs in the queue
  int gang_gpus = 1024;          // the gang: gang_gpus / gpus_per_node whole-node workers
  double gang_background = 0.4;  // share of GPUs busy (single-GPU jobs) when the gang arrives
  int repeats = 5;               // each figure is the median of this many runs
  std::uint64_t seed = 1;
  std::string policy = "bestfit";  // the placement policy (PlacementPolicyNames())
};

struct ScheduleBenchResult {
  // One Schedule call over the pending queue on an empty cluster: it places single-GPU jobs
  // until the cluster is full.
  std::int64_t placements = 0;
  double schedule_ms = 0;
  double placements_per_second = 0;
  double schedule_cpu_ms = 0;       // the same call's CPU time (this thread)
  double baseline_schedule_ms = 0;  // the same call by the plain scan (no class index)
  double baseline_placements_per_second = 0;
  double baseline_schedule_cpu_ms = 0;
  bool baseline_same_decisions = false;
  // The gang, alone in a Schedule call, on the cluster `gang_background` full.
  double gang_ms = 0;
  double gang_empty_ms = 0;        // on the empty cluster
  double gang_scan_ms = 0;         // the same call by the plain scan
  double gang_baseline_ms = 0;     // gang placement "greedy" (task by task), same state
  std::string gang_level;          // the level of the domain the gang got (e.g. "spine")
  std::string gang_span;           // the innermost level all its tasks share
  std::string gang_baseline_span;  // the same for the greedy placement
  int gang_leaves = 0;             // leaves the gang's tasks span
  int gang_baseline_leaves = 0;
};

// The cluster: `nodes` nodes of `gpus_per_node` H100s in leaves of `nodes_per_leaf` under
// spines of `leaves_per_spine` leaves, built by the cluster YAML loader.
Result<Cluster> BuildLeafSpineCluster(int nodes, int gpus_per_node, int nodes_per_leaf,
                                      int leaves_per_spine);

Result<ScheduleBenchResult> RunScheduleBench(const ScheduleBenchOptions& options);

// "CPU model, N cores" from /proc/cpuinfo where there is one.
std::string MachineDescription();

// The JSON written by `tessera bench schedule --out`: placements_per_second, gang_1024_ms,
// machine, the options, and the baseline with its ratios.
nlohmann::json ScheduleBenchJson(const ScheduleBenchOptions& options,
                                 const ScheduleBenchResult& result);

}  // namespace tessera
