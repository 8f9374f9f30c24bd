// The placement mechanism: filters the nodes where a task fits, asks the policy for a score,
// breaks ties as the policy says (TieBreak: a node order fixed for the run, or a seeded draw),
// and places gangs all-or-nothing. Scores of deterministic policies are memoised per (node,
// task shape) until the node changes, so a placement costs one cache probe per unchanged node.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
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
// version, and by (class of equal nodes, shape) for the class index. Serves one placement
// policy; not thread-safe.
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

  // The entries of `shape` by class id of `index`, keyed on the class's stamp (at least
  // index.id_limit() of them). Forgets every class entry when `index` is of another lineage
  // than the last one.
  Entry* ClassRow(int shape, const NodeClassIndex& index);
  // The node order in which `policy` breaks ties on `cluster`, for the class index: a null
  // order for node ids (a seeded draw); null itself when no index can reproduce the order (a
  // node rank that misses some nodes). Computed once per cluster.
  const std::shared_ptr<const NodeOrder>* TieOrder(const Cluster& cluster,
                                                   const PlacementPolicy& policy);

  // Place single tasks through the class index (default on) or by the plain scan over every
  // node (same decisions, slower: the benchmarks' baseline).
  bool index_classes() const { return index_classes_; }
  void set_index_classes(bool on) { index_classes_ = on; }

 private:
  std::map<std::tuple<std::int64_t, std::int64_t, int, std::int32_t, std::uint64_t>, int>
      shape_ids_;
  std::vector<std::vector<Entry>> entries_;        // [shape][node]: a scan over nodes reads one row
  std::vector<std::vector<Entry>> class_entries_;  // [shape][class id]
  std::shared_ptr<const void> class_lineage_;
  bool index_classes_ = true;
  struct TieOrderMemo {
    const Cluster* cluster = nullptr;
    const Node* nodes = nullptr;
    std::size_t node_count = 0;
    bool indexable = false;
    std::shared_ptr<const NodeOrder> order;
  } tie_order_;
  const std::shared_ptr<const NodeOrder> id_order_;  // null: node ids
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
  // Its draws come from DrawsFor(job), not from `cycle` (the cycle's stream, kept in the
  // signature for the callers that still thread it through): the same job on the same state is
  // placed the same whichever cycle, and whatever placements before it, it falls in.
  std::optional<Placement> PlaceGang(ClusterState& state, const Workload& job, Rng& cycle) const;

  // The stream of one job's seeded draws (tie-breaks, GPUs drawn at random): seeded by the
  // policy's draw seed (PlacementConfig::draw_seed) and the job's name, or its id when it has
  // none. The name, not the id, because the controller numbers jobs by their units, the
  // simulator by trace row. Each placement of the job starts the stream afresh.
  Rng DrawsFor(const Workload& job) const;

  // Jobs that name a speed per GPU model (Workload::gpu_model_speeds) are tried on their
  // fastest model first, then the next, then on any mix (gpu_model_speed.h). Off: the models
  // are one pool, as a model-blind scheduler sees them (the baseline).
  void set_fastest_model_first(bool on) { fastest_model_first_ = on; }

 private:
  std::optional<Placement> PlaceGangOnModels(ClusterState& state, const Workload& job,
                                             Rng& rng) const;
  std::optional<Placement> PlaceGangOnce(ClusterState& state, const Workload& job, Rng& rng) const;
  // The state's class index when this placement may use it (a policy that scores from state,
  // a cache that indexes, a tie-break order the index can hold), else null.
  const NodeClassIndex* ClassIndexFor(const ClusterState& state) const;
  std::optional<TaskPlacement> PlaceByClass(const ClusterState& state, const NodeClassIndex& index,
                                            const TaskShape& shape, GpuModelSet models,
                                            Rng& rng) const;
  // The placement of a task on the chosen node.
  TaskPlacement PlaceOn(const ClusterState& state, NodeId node, const TaskShape& shape,
                        NodeScore score, Rng& rng) const;
  bool fastest_model_first_ = false;
  const PlacementPolicy& policy_;
  ScoreCache* cache_;
  const TopologyGangPlacer* gangs_;
  mutable std::vector<NodeId> tied_;                 // scratch, reused across placements
  mutable std::vector<std::uint32_t> tied_classes_;  // scratch
};

// Why `job` can never run on `cluster` even when it is empty, or nullopt when it could: a task
// no node can hold, more GPUs than the cluster has, a topology level the cluster does not have,
// or a required level no domain of which can hold the gang.
std::optional<std::string> NeverFitsReason(const Cluster& cluster, const Workload& job);

}  // namespace tessera
