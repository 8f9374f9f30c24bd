// The placement mechanism: filters the nodes where a task fits, asks the policy for a score,
// breaks ties as the policy says (TieBreak: a node order fixed for the run, or a seeded draw),
// and places gangs all-or-nothing. Scores of deterministic policies are memoised per (node,
// task shape) until the node changes, so a placement costs one cache probe per unchanged node.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/cluster_state.h"
#include "core/rng.h"
#include "core/workload.h"
#include "sched/placement/placement_policy.h"

namespace tessera {

class TopologyGangPlacer;

// Memo of (fits, NodeScore) by (node, task shape and accepted models), keyed on the node's
// version. Serves one ClusterState and its copies; not thread-safe.
class ScoreCache {
 public:
  struct Entry {
    std::uint64_t version_plus_one = 0;  // 0 = empty
    bool fits = false;
    NodeScore score;
  };
  int ShapeId(const TaskShape& shape, GpuModelSet models);
  const Entry* Find(NodeId node, int shape, std::uint64_t version) const;
  void Store(NodeId node, int shape, std::uint64_t version, bool fits, NodeScore score);
  // The entries of `shape`, one per node, at least `nodes` of them: a scan over every node
  // probes them in place rather than through Find.
  Entry* Row(int shape, std::size_t nodes);

 private:
  std::map<std::tuple<std::int64_t, std::int64_t, int, std::int32_t, std::uint64_t>, int>
      shape_ids_;
  std::vector<std::vector<Entry>> entries_;  // [shape][node]: a scan over nodes reads one row
};

// True when one task of `shape` restricted to `models` fits on the node now.
bool TaskFitsNode(const Node& node, const NodeState& s, const TaskShape& shape, GpuModelSet models);

class TaskPlacer {
 public:
  // `cache` may be null (no memo). `gangs`, when given, places every job of several tasks on a
  // cluster with a topology level of several domains, and every job of several tasks with a
  // topology constraint (see topology_gang_placer.h); without it, tasks are placed one by one
  // on the best node for the policy and topology constraints are ignored (the baseline
  // "greedy" gang placement).
  TaskPlacer(const PlacementPolicy& policy, ScoreCache* cache,
             const TopologyGangPlacer* gangs = nullptr)
      : policy_(policy), cache_(cache), gangs_(gangs) {}

  // The best node for one task, or nullopt when no node fits. `candidates`, when given,
  // restricts the search (in that order) — e.g. to one topology domain.
  std::optional<TaskPlacement> Place(const ClusterState& state, const TaskShape& shape,
                                     GpuModelSet models, Rng& rng,
                                     const std::vector<NodeId>* candidates = nullptr) const;

  // Places every task of `job` in rank order, taking resources in `state` as it goes. On
  // failure gives back what it took and returns nullopt: a gang is all-or-nothing. A job that
  // names a topology level the cluster does not have is not placed (NeverFitsReason says why).
  // An RLJob's role affinities (role_affinity.h) hold in every placement it returns.
  std::optional<Placement> PlaceGang(ClusterState& state, const Workload& job, Rng& rng) const;

  // Jobs that name a speed per GPU model (Workload::gpu_model_speeds) are tried on their
  // fastest model first, then the next, then on any mix (gpu_model_speed.h). Off: the models
  // are one pool, as a model-blind scheduler sees them (the baseline).
  void set_fastest_model_first(bool on) { fastest_model_first_ = on; }

 private:
  std::optional<Placement> PlaceGangOnModels(ClusterState& state, const Workload& job,
                                             Rng& rng) const;
  std::optional<Placement> PlaceGangOnce(ClusterState& state, const Workload& job, Rng& rng) const;
  bool fastest_model_first_ = false;
  const PlacementPolicy& policy_;
  ScoreCache* cache_;
  const TopologyGangPlacer* gangs_;
  mutable std::vector<NodeId> tied_;  // scratch, reused across placements
};

// Why `job` can never run on `cluster` even when it is empty, or nullopt when it could: a task
// no node can hold, more GPUs than the cluster has, a topology level the cluster does not have,
// or a required level no domain of which can hold the gang.
std::optional<std::string> NeverFitsReason(const Cluster& cluster, const Workload& job);

}  // namespace tessera
