// Builds the leaf/spine view of a cluster for recovery (see recovery_topology.h).
#include "sched/recovery/recovery_topology.h"

#include <algorithm>

namespace tessera {

std::optional<std::uint32_t> RecoveryTopology::DomainOf(const Cluster& cluster, NodeId node,
                                                        std::string_view level) const {
  if (level == "node") return node.value;
  if (level == "leaf") return leaf(node);
  if (level == "spine") return spine(node);
  const int index = cluster.topology().LevelIndex(std::string(level));
  if (index < 0) return std::nullopt;
  const auto& domain = cluster.node(node).domain;
  if (static_cast<std::size_t>(index) >= domain.size()) return std::nullopt;
  return domain[static_cast<std::size_t>(index)];
}

RecoveryTopology BuildRecoveryTopology(const Cluster& cluster,
                                       const RecoveryTopologyOptions& options) {
  RecoveryTopology t;
  const Topology& topo = cluster.topology();
  const int levels = static_cast<int>(topo.levels.size());
  t.leaf_level = topo.LevelIndex("leaf");
  if (t.leaf_level < 0 && levels > 0) t.leaf_level = levels - 1;
  if (t.leaf_level >= 0) {
    const int spine = topo.LevelIndex("spine");
    if (spine >= 0 && spine < t.leaf_level) {
      t.spine_level = spine;
    } else if (t.leaf_level > 0) {
      t.spine_level = t.leaf_level - 1;
    }
  }

  const auto n = static_cast<std::size_t>(cluster.node_count());
  t.leaf_of.resize(n);
  const std::uint32_t per_leaf = static_cast<std::uint32_t>(std::max(1, options.nodes_per_leaf));
  std::uint32_t leaves = 0;
  for (const Node& node : cluster.nodes()) {
    std::uint32_t leaf = node.id.value / per_leaf;
    if (t.leaf_level >= 0 && static_cast<std::size_t>(t.leaf_level) < node.domain.size()) {
      leaf = node.domain[static_cast<std::size_t>(t.leaf_level)];
    }
    t.leaf_of[node.id.value] = leaf;
    leaves = std::max(leaves, leaf + 1);
  }
  t.leaf_nodes.resize(leaves);
  for (const Node& node : cluster.nodes())
    t.leaf_nodes[t.leaf_of[node.id.value]].push_back(node.id);

  t.leaf_names.resize(leaves);
  for (std::uint32_t l = 0; l < leaves; ++l) {
    const bool named = t.leaf_level >= 0 &&
                       static_cast<std::size_t>(t.leaf_level) < topo.domain_names.size() &&
                       l < topo.domain_names[static_cast<std::size_t>(t.leaf_level)].size();
    t.leaf_names[l] = named ? topo.domain_names[static_cast<std::size_t>(t.leaf_level)][l]
                            : "leaf-" + std::to_string(l);
  }

  const std::uint32_t per_spine = static_cast<std::uint32_t>(std::max(1, options.leaves_per_spine));
  t.spine_of_leaf.resize(leaves);
  for (std::uint32_t l = 0; l < leaves; ++l) {
    std::uint32_t spine = l / per_spine;
    if (t.spine_level >= 0 && !t.leaf_nodes[l].empty()) {
      const auto& domain = cluster.node(t.leaf_nodes[l].front()).domain;
      if (static_cast<std::size_t>(t.spine_level) < domain.size()) {
        spine = domain[static_cast<std::size_t>(t.spine_level)];
      }
    }
    t.spine_of_leaf[l] = spine;
  }
  return t;
}

Status CheckSparesFit(const RecoveryTopology& topology, const Cluster& cluster, int per_domain,
                      const std::string& field) {
  if (per_domain < 0) {
    return InvalidArgument(field + ": must be >= 0, got " + std::to_string(per_domain));
  }
  for (std::size_t l = 0; l < topology.leaf_nodes.size(); ++l) {
    const auto size = static_cast<int>(topology.leaf_nodes[l].size());
    if (per_domain < size) continue;
    const std::string level =
        topology.leaf_level >= 0
            ? cluster.topology().levels[static_cast<std::size_t>(topology.leaf_level)]
            : std::string("leaf");
    return InvalidArgument(field + ": " + std::to_string(per_domain) + " spare node(s) per " +
                           level + " domain, but " + level + " " + topology.leaf_names[l] +
                           " has " + std::to_string(size) +
                           " node(s); at least one must be left to run work");
  }
  return {};
}

}  // namespace tessera
