// The allocation experiment of the FGD paper (Weng et al., USENIX ATC'23, §6): pods of an
// openb list arrive in a seeded random order, inflated to 130% of the cluster's GPU capacity;
// each is placed once on arrival by the placement policy under test, or fails; nothing departs.
// The figure of merit is the GPU allocation ratio against arrived demand. See
// docs/allocation-experiment.md for the exact procedure.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/status.h"
#include "sched/placement/placement_policy.h"
#include "sim/trace/trace_job.h"

namespace tessera {

inline constexpr int kDemandBins = 131;  // 0..130 % of GPU capacity

struct AllocationOptions {
  std::vector<std::string> policies = {"random",  "dotprod", "clustering",
                                       "packing", "bestfit", "fgd"};
  int seeds = 10;
  std::uint64_t base_seed = 0;  // seed s of a run is base_seed + s
  double tune_ratio = 1.3;      // arrived demand to reach, as a multiple of capacity
  // FGD's target workload: the most frequent pod shapes, kept until they cover this share of
  // the pods (0.95, as the FGD authors' simulator). 1.0 keeps every shape.
  double target_coverage = 0.95;
  bool exact_scores = false;  // fgd: exact fragmentation decrease, not the reference's 0-100
  // Equal scores: the reference's node order, a permutation drawn per seed (kNodeOrder), or a
  // seeded draw among the tied nodes (kSeededDraw, Tessera's scheduler default).
  TieBreak tie_break = TieBreak::kNodeOrder;
  // Place through the scheduler's class index (default) or by the plain scan over every node
  // (SchedulerConfig::placement_index): the same figures either way, only the time differs.
  bool placement_index = true;
  int threads = 0;  // 0 = one per core
};

// One (policy, seed) run: per demand bin, the mean over the pods whose arrived demand rounds
// to that percentage; nullopt where no pod fell in the bin.
struct AllocationRun {
  std::string policy;
  int seed = 0;
  std::vector<std::optional<double>> allocation;             // allocated GPU milli ÷ capacity
  std::vector<std::optional<double>> fragmentation;          // fragmented GPU milli ÷ capacity
  std::vector<std::optional<double>> fragmentation_of_free;  // fragmented ÷ free GPU milli
  std::int64_t pods_arrived = 0;
  std::int64_t pods_failed = 0;
  double wall_seconds = 0;
};

struct AllocationPolicyResult {
  std::string policy;
  int seeds = 0;
  std::vector<std::optional<double>> allocation_mean, allocation_min, allocation_max;
  std::vector<std::optional<double>> fragmentation_mean, fragmentation_of_free_mean;
  double pods_arrived_mean = 0, pods_failed_mean = 0;
  double wall_seconds = 0;  // summed over its seeds
};

// Each node's rank (indexed by NodeId) in the order that equal scores fill the nodes under
// TieBreak::kNodeOrder, as the FGD authors' simulator sets it: the nodes sorted by name, each
// renamed with the prefix of its place in a permutation drawn from `seed`, the smallest name
// winning a tie.
std::vector<std::uint32_t> AllocationNodeTieRank(const Cluster& cluster, std::uint64_t seed);

// The arrival order of one seed: pod indices into `pods`. Exposed for tests.
std::vector<std::size_t> AllocationArrivalOrder(const std::vector<TraceJob>& pods,
                                                const Cluster& cluster, std::uint64_t seed,
                                                double tune_ratio);

Result<AllocationRun> RunAllocationOnce(const Cluster& cluster, const std::vector<TraceJob>& pods,
                                        const std::string& policy, std::uint64_t seed,
                                        const AllocationOptions& options);

// All policies × seeds, on `options.threads` threads; results in the order of
// options.policies and independent of the thread count. `progress(done, total, run)` is called
// after each run, from one thread at a time.
Result<std::vector<AllocationPolicyResult>> RunAllocationExperiment(
    const Cluster& cluster, const std::vector<TraceJob>& pods, const AllocationOptions& options,
    const std::function<void(int, int, const AllocationRun&)>& progress = {});

}  // namespace tessera
