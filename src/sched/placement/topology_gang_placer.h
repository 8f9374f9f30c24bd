// Topology-aware gang placement. A gang (a job of several tasks) is placed inside one domain
// of the tightest topology level that can hold it: first a domain of its preferred level (or a
// single node when it prefers nothing), else a domain one level up, and so on, never wider than
// its required level. Within the chosen domain the tasks are laid out domain by domain, so that
// consecutive ranks share a node, then a leaf, then a spine. See docs/topology.md.
//
// TopologyTree is the static part (which nodes sit under which domain), built once per cluster.
// TopologyGangPlacer computes free capacity per domain from the ClusterState on each call (one
// pass over the nodes with prefix sums, so any domain's free capacity is O(1)), so that it
// never goes stale. Both are pure: no clocks, I/O or threads; the only randomness is the Rng
// passed in, and only placement policies that are not deterministic use it. Not thread-safe
// (scratch buffers are reused across calls).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cluster.h"
#include "core/cluster_state.h"
#include "core/placement.h"
#include "core/rng.h"
#include "core/workload.h"
#include "sched/placement/placement_policy.h"

namespace tessera {

// Level numbers used by the topology code: 0 .. L-1 are the cluster's named levels, outermost
// first (Topology::levels); L is the node level; kClusterLevel is the whole cluster (the root).
inline constexpr int kClusterLevel = -1;

// The number of the level called `name` in `topology`: a named level, "node" (= number of
// named levels), or nullopt when the cluster has no such level ("gpu" included: a gang's tasks
// are whole processes, so no level below a node can hold several of them).
std::optional<int> LevelNumber(const Topology& topology, std::string_view name);
// "cluster", "node" or the named level.
std::string LevelName(const Topology& topology, int level);
// The innermost level one of whose domains holds every task of `p`: the node level when all
// tasks share a node, kClusterLevel when they span the outermost level's domains, and
// kClusterLevel for an empty placement. Nodes are compared by Node::domain[level].
int SpanLevel(const Cluster& cluster, const Placement& p);

// Which nodes sit under which domain, as a tree: the root (the cluster), one vertex per domain
// of each named level, one vertex per node. Nodes are ordered by their domain indices (level by
// level, then node id), so every vertex covers a contiguous range of that order. A domain whose
// nodes lie under two parents (not produced by the cluster YAML, but possible in a hand-built
// cluster) becomes one vertex per parent: placing inside either still satisfies its level.
// Immutable once built; safe to share.
class TopologyTree {
 public:
  struct Vertex {
    std::uint32_t begin = 0;  // range [begin, end) in order()
    std::uint32_t end = 0;
    std::uint32_t domain = 0;       // Node::domain[level], or the node id at the node level
    std::uint32_t first_child = 0;  // in vertices(level + 1)
    std::uint32_t child_count = 0;
    bool named = true;  // false: nodes that lack an index at this level
  };

  static TopologyTree Build(const Cluster& cluster);

  const Cluster& cluster() const { return *cluster_; }
  int node_level() const { return node_level_; }
  // True when some named level has two domains or more: only then do placements differ in
  // locality above the node.
  bool multi_domain() const { return multi_domain_; }
  const std::vector<NodeId>& order() const { return order_; }
  // REQUIRES: kClusterLevel <= level <= node_level(). The root is the one vertex of
  // kClusterLevel.
  const std::vector<Vertex>& vertices(int level) const {
    return levels_[static_cast<std::size_t>(level + 1)];
  }

 private:
  const Cluster* cluster_ = nullptr;
  int node_level_ = 0;
  bool multi_domain_ = false;
  std::vector<NodeId> order_;
  std::vector<std::vector<Vertex>> levels_;  // [level + 1]
};

// What the placer decided, for tests, metrics and the simulator's slowdown model.
struct GangPlacementInfo {
  int start_level = kClusterLevel;  // the tightest level tried
  int level = kClusterLevel;        // the level of the domain the gang was placed in
  int span_level = kClusterLevel;   // SpanLevel of the placement (as tight as `level` or tighter)
};

class TopologyGangPlacer {
 public:
  // `policy` chooses the GPUs inside a node; `tree` must describe the cluster of every state
  // passed to Place. Both must outlive the placer.
  TopologyGangPlacer(const PlacementPolicy& policy, const TopologyTree& tree)
      : policy_(policy), tree_(tree) {}

  // Places every task of `job` inside one domain, as described at the top of this file, taking
  // resources in `state`. All-or-nothing: on failure nothing is taken and nullopt is returned
  // (also when the job names a level the cluster does not have). The placement is in rank
  // order. `info`, when given, receives the levels involved.
  std::optional<Placement> Place(ClusterState& state, const Workload& job, Rng& rng,
                                 GangPlacementInfo* info = nullptr) const;

  const TopologyTree& tree() const { return tree_; }

 private:
  struct Group {
    TaskShape shape;
    int count = 0;
    std::int64_t units = 0;  // capacity units one task takes (milli-GPU, or 1 for CPU-only)
  };
  void Prepare(const ClusterState& state, const Workload& job) const;
  std::int64_t Cap(const TopologyTree::Vertex& v) const {
    return cap_prefix_[v.end] - cap_prefix_[v.begin];
  }
  bool MayFit(const TopologyTree::Vertex& v) const;
  void Collect(int level, std::uint32_t vertex, std::int64_t need, std::vector<NodeId>& out) const;
  bool TryVertex(ClusterState& state, int level, std::uint32_t vertex, Rng& rng,
                 Placement& placement) const;
  bool Fill(ClusterState& state, NodeId node, Rng& rng, Placement& placement) const;

  const PlacementPolicy& policy_;
  const TopologyTree& tree_;
  // Scratch for one call.
  mutable std::vector<Group> groups_;
  mutable std::vector<int> rank_group_;  // group of each rank
  mutable GpuModelSet models_ = GpuModelSet::Any();
  mutable std::int64_t need_ = 0;                              // the gang's capacity units
  mutable std::vector<std::int64_t> cap_prefix_;               // over order(): units per node
  mutable std::vector<std::vector<std::int64_t>> fit_prefix_;  // [group]: tasks per node
  mutable std::vector<std::int64_t> class_fit_;  // [group × class]: tasks per node, -1 = unknown
  mutable std::vector<NodeId> walk_;
};

// Why `job` can never satisfy its topology constraint on `cluster`, even empty: a level the
// cluster does not have, or a required level no domain of which can hold the gang. nullopt when
// it could.
std::optional<std::string> TopologyNeverFitsReason(const Cluster& cluster, const Workload& job);

}  // namespace tessera
