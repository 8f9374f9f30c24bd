// The placement extension point: given one task and one node where it fits, which GPUs of
// the node would it take and how good is that (higher is better)? The framework (TaskPlacer)
// owns feasibility, iteration order, caching and tie-breaking; a policy only scores.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/cluster_state.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/workload.h"
#include "sched/placement/fragmentation.h"

namespace tessera {

struct NodeScore {
  double score = 0;
  std::uint16_t gpu_mask = 0;  // the GPUs the task would take on this node
};

// Settings a placement policy may read; each documents its default.
struct PlacementConfig {
  TargetWorkload target_workload;  // fgd: the expected task shapes (default: none = no fragmentation)
};

class PlacementPolicy {
 public:
  virtual ~PlacementPolicy() = default;
  virtual std::string_view name() const = 0;
  // True when Score depends only on the node's state and the task's shape, so that a score
  // may be reused until the node changes.
  virtual bool deterministic() const { return true; }
  // REQUIRES: the task fits on `node` (model allowed, CPU, memory and enough GPUs free).
  // `rng` may be used only by policies that are not deterministic().
  virtual NodeScore Score(const ClusterState& state, NodeId node, const TaskShape& shape,
                          Rng& rng) const = 0;
  // The GPUs the task finally takes on the chosen node; called once, for the winner. Policies
  // that draw GPUs at random do it here so that scores stay cacheable. Default: Score's mask.
  virtual std::uint16_t FinalGpus(const ClusterState&, NodeId, const TaskShape&,
                                  const NodeScore& score, Rng&) const {
    return score.gpu_mask;
  }
};

// The policies registered by name: random, dotprod, clustering, packing, bestfit, fgd, firstfit.
std::vector<std::string> PlacementPolicyNames();
Result<std::unique_ptr<PlacementPolicy>> MakePlacementPolicy(std::string_view name,
                                                             const PlacementConfig& config);

// Helpers shared by policies: GPUs of `node` that can take `shape`.
// For a share: the single GPU with the least free milli that still fits (best fit on the GPU).
// For whole GPUs: the lowest-indexed fully free GPUs.
std::uint16_t TightestGpus(const Node& node, const NodeState& s, const TaskShape& shape);
// Every GPU index of `node` whose free milli is at least `milli`, as a mask.
std::uint16_t GpusWithFree(const Node& node, const NodeState& s, std::int32_t milli);

}  // namespace tessera
