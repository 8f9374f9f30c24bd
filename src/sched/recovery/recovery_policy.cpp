// The building blocks recovery policies share (gang placement leaf by leaf, finding a node near
// a failed one) and the drain rule. See recovery_policy.h.
#include "sched/recovery/recovery_policy.h"

#include <algorithm>
#include <set>

#include "sched/placement/placement_policy.h"
#include "sched/placement/task_placer.h"

namespace tessera {

std::string_view DecisionKindName(RecoveryDecision::Kind k) {
  switch (k) {
    case RecoveryDecision::Kind::kRequeue:
      return "requeue";
    case RecoveryDecision::Kind::kReplace:
      return "replace";
    case RecoveryDecision::Kind::kResize:
      return "resize";
    case RecoveryDecision::Kind::kWait:
      return "wait";
  }
  return "wait";
}

std::optional<RecoveryDecision> RecoveryPolicy::Grow(const RecoveryRequest&,
                                                     const RecoveryView&) const {
  return std::nullopt;
}

bool DrainRule::ShouldDrain(const std::vector<Tick>& failure_times, Tick now) const {
  if (threshold <= 0) return false;
  // Failures in (now - window, now]: a node that failed twice a month apart is unlucky, one
  // that failed twice in a week is suspect.
  const auto recent = std::count_if(failure_times.begin(), failure_times.end(),
                                    [&](Tick t) { return t <= now && t > now - window; });
  return recent >= threshold;
}

TaskPlacement TaskOn(const ClusterState& state, NodeId node, const TaskShape& shape) {
  const Node& n = state.cluster().node(node);
  return TaskPlacement{node, TightestGpus(n, state.node(node), shape),
                       shape.gpus > 0 ? shape.gpu_milli : 0, shape.cpu_milli, shape.memory_mib};
}

namespace {

bool IsSpare(const RecoveryView& view, NodeId n) {
  return view.is_spare != nullptr && n.value < view.is_spare->size() && (*view.is_spare)[n.value];
}

// Takes (sign −1) or gives back (sign +1) one task's resources on a copy of its node's state.
void Adjust(NodeState& s, const TaskPlacement& t, int sign) {
  s.free.cpu_milli += sign * t.cpu_milli;
  s.free.memory_mib += sign * t.memory_mib;
  s.free.gpu_milli += sign * t.gpu_count() * std::int64_t{t.gpu_milli};
  for (int g = 0; g < kMaxGpusPerNode; ++g) {
    if (t.gpu_mask >> g & 1) s.gpu_free[g] += sign * t.gpu_milli;
  }
  s.tasks = static_cast<std::uint32_t>(static_cast<int>(s.tasks) - sign);
}

}  // namespace

std::optional<Placement> PlaceGangOnLeaves(const Workload& job, int workers,
                                           const ClusterState& state, const RecoveryView& view,
                                           const Placement* give_back) {
  if (workers <= 0) return Placement{};
  const Cluster& cluster = state.cluster();
  const RecoveryTopology& topo = *view.topology;
  // The domains of the required level, in index order; one pass over the whole cluster when
  // there is no requirement or the cluster has no such level.
  std::vector<std::optional<std::uint32_t>> domains;
  if (!job.topology.require.empty()) {
    std::set<std::uint32_t> seen;
    for (const Node& n : cluster.nodes()) {
      if (auto d = topo.DomainOf(cluster, n.id, job.topology.require)) seen.insert(*d);
    }
    for (std::uint32_t d : seen) domains.emplace_back(d);
  }
  if (domains.empty()) domains.emplace_back(std::nullopt);
  // The gang's own tasks by node, to give back on a node's copy of its state.
  std::vector<TaskPlacement> own = give_back != nullptr ? *give_back : Placement{};
  std::sort(own.begin(), own.end(),
            [](const TaskPlacement& a, const TaskPlacement& b) { return a.node < b.node; });

  for (const auto& domain : domains) {
    Placement placement;
    placement.reserve(static_cast<std::size_t>(workers));
    for (const auto& leaf : topo.leaf_nodes) {
      for (NodeId id : leaf) {
        if (IsSpare(view, id)) continue;
        if (domain && topo.DomainOf(cluster, id, job.topology.require) != domain) continue;
        // A copy of this node's state, taken as we go so that two ranks never share a GPU.
        NodeState s = state.node(id);
        const auto [first, last] = std::equal_range(
            own.begin(), own.end(), TaskPlacement{id},
            [](const TaskPlacement& a, const TaskPlacement& b) { return a.node < b.node; });
        for (auto it = first; it != last; ++it) Adjust(s, *it, +1);
        while (static_cast<int>(placement.size()) < workers) {
          const TaskShape& shape = job.ShapeOfTask(static_cast<int>(placement.size()));
          if (!TaskFitsNode(cluster.node(id), s, shape, job.allowed_models)) break;
          const TaskPlacement t{id, TightestGpus(cluster.node(id), s, shape),
                                shape.gpus > 0 ? shape.gpu_milli : 0, shape.cpu_milli,
                                shape.memory_mib};
          Adjust(s, t, -1);
          placement.push_back(t);
        }
        if (static_cast<int>(placement.size()) == workers) return placement;
      }
    }
  }
  return std::nullopt;
}

std::optional<NodeId> FindNodeNear(const Workload& job, const TaskShape& shape, NodeId near,
                                   std::optional<std::uint32_t> required_domain, bool from_spares,
                                   const std::vector<NodeId>& exclude, const RecoveryView& view) {
  const RecoveryTopology& topo = *view.topology;
  const ClusterState& state = *view.state;
  const Cluster& cluster = state.cluster();
  if (from_spares && view.spares_by_leaf == nullptr) return std::nullopt;
  const auto ok = [&](NodeId n) {
    if (IsSpare(view, n) != from_spares) return false;
    if (std::find(exclude.begin(), exclude.end(), n) != exclude.end()) return false;
    if (required_domain && topo.DomainOf(cluster, n, job.topology.require) != required_domain) {
      return false;
    }
    return TaskFitsNode(cluster.node(n), state.node(n), shape, job.allowed_models);
  };
  const auto scan = [&](std::uint32_t leaf) -> std::optional<NodeId> {
    const std::vector<NodeId>* nodes = &topo.leaf_nodes[leaf];
    if (from_spares) {
      if (leaf >= view.spares_by_leaf->size()) return std::nullopt;
      nodes = &(*view.spares_by_leaf)[leaf];
    }
    for (NodeId n : *nodes) {
      if (ok(n)) return n;
    }
    return std::nullopt;
  };
  const std::uint32_t home_leaf = topo.leaf(near);
  const std::uint32_t home_spine = topo.spine(near);
  if (auto n = scan(home_leaf)) return n;
  const auto leaves = static_cast<std::uint32_t>(topo.leaf_count());
  for (std::uint32_t l = 0; l < leaves; ++l) {
    if (l == home_leaf || topo.spine_of_leaf[l] != home_spine) continue;
    if (auto n = scan(l)) return n;
  }
  for (std::uint32_t l = 0; l < leaves; ++l) {
    if (topo.spine_of_leaf[l] == home_spine) continue;
    if (auto n = scan(l)) return n;
  }
  return std::nullopt;
}

}  // namespace tessera
