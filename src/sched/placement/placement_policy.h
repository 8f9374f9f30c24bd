// The placement extension point: given one task and one node where it fits, which GPUs of
// the node would it take and how good is that (higher is better)? The framework (TaskPlacer)
// owns feasibility, iteration order, caching and tie-breaking; a policy only scores.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
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

// How the framework picks among nodes of equal best score.
enum class TieBreak {
  // The first tied node in a node order fixed for the run (PlacementConfig::node_rank; by node
  // name when none is given). The FGD authors' simulator picks the smallest node name among
  // equal scores (its vendored Kubernetes selectHost, "for reproducibility") after prefixing
  // every node name with its place in a random permutation drawn at start: in effect a random
  // node order that equal scores fill front to back. The allocation experiment's default, so
  // that the FGD paper's baselines behave as published.
  kNodeOrder,
  // Seeded (Kubernetes' selectHost draws too): the tied node earliest in a node order drawn
  // from the job's own stream (tie_walk.h, TaskPlacer::DrawsFor), unmoved by the cycle or by a
  // node that would not have won joining the tie. The scheduler's default.
  kSeededDraw,
};

// Settings a placement policy may read; each documents its default.
struct PlacementConfig {
  TieBreak tie_break = TieBreak::kSeededDraw;  // how equal scores are broken (see TieBreak)
  // kNodeOrder: each node's rank, indexed by NodeId; the lower rank wins a tie (default: none =
  // by node name). The allocation experiment draws one permutation per seed, as the reference.
  std::vector<std::uint32_t> node_rank;
  // The run's seed of every seeded draw (ties, GPUs drawn at random): each job draws from a
  // stream seeded by this and the job (TaskPlacer::DrawsFor), never by the scheduling cycle, so
  // the simulator and the controller, which run different numbers of cycles, draw alike.
  // Default 0: the controller's (`tessera sim --seed 0`, the default, reproduces its draws).
  std::uint64_t draw_seed = 0;
  TargetWorkload
      target_workload;  // fgd: the expected task shapes (default: none = no fragmentation)
  // fgd-strand: every task shape of the workload with its count (default: none = use
  // target_workload). FGD's target keeps only the popular shapes; fgd-strand wants them all.
  TargetWorkload workload_mix;
  // fgd: compare the fragmentation decrease exactly instead of the reference simulator's
  // integer score 0-100 (default off = the reference, as the FGD paper ran it).
  bool exact_scores = false;
};

class PlacementPolicy {
 public:
  virtual ~PlacementPolicy() = default;
  virtual std::string_view name() const = 0;
  // True when Score depends only on the node's state and the task's shape, so that a score
  // may be reused until the node changes.
  virtual bool deterministic() const { return true; }
  // True when Score's value, the GPUs it picks and whether it finds them depend only on the
  // task and the node's NodeClassKey (core/node_class_index.h: node type, health, free CPU, memory
  // and GPU milli, each GPU's free milli, the node's GPU-affinity tags), never on the node's
  // name, id or place. Then the placer scores one node per class of equal keys and breaks the
  // tie among the members of the best classes, with the decisions of a scan over every node.
  // Default false: the placer scans.
  virtual bool scores_from_state() const { return false; }
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
  // How the framework breaks ties among this policy's best nodes (PlacementConfig::tie_break).
  virtual TieBreak tie_break() const { return tie_break_; }
  // kNodeOrder: the rank of each node (PlacementConfig::node_rank); empty = by node name.
  const std::vector<std::uint32_t>& node_rank() const { return node_rank_; }
  void set_tie_break(TieBreak t, std::vector<std::uint32_t> node_rank) {
    tie_break_ = t;
    node_rank_ = std::move(node_rank);
  }
  // PlacementConfig::draw_seed.
  std::uint64_t draw_seed() const { return draw_seed_; }
  void set_draw_seed(std::uint64_t seed) { draw_seed_ = seed; }

 private:
  TieBreak tie_break_ = TieBreak::kSeededDraw;
  std::vector<std::uint32_t> node_rank_;
  std::uint64_t draw_seed_ = 0;
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
