// Where every node sits in the network as recovery sees it: its leaf switch and the spine (or
// pod) above that leaf. Taken from the cluster's named topology levels when it has them;
// otherwise made up by grouping consecutive nodes, so that a flat cluster ("2100x8") still has
// leaves whose switches can fail and spares that can sit next to the nodes they stand in for.
// An immutable value; safe to share between threads once built.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cluster.h"
#include "core/ids.h"
#include "core/status.h"

namespace tessera {

struct RecoveryTopologyOptions {
  int nodes_per_leaf = 32;    // synthetic leaves: consecutive nodes per leaf (flat clusters)
  int leaves_per_spine = 16;  // synthetic spines: consecutive leaves per spine
};

struct RecoveryTopology {
  std::vector<std::uint32_t> leaf_of;           // per node
  std::vector<std::uint32_t> spine_of_leaf;     // per leaf
  std::vector<std::vector<NodeId>> leaf_nodes;  // per leaf, ascending node id
  std::vector<std::string> leaf_names;          // the cluster's domain name, or "leaf-<i>"
  int leaf_level = -1;   // index in Cluster::topology().levels; -1 = synthetic leaves
  int spine_level = -1;  // likewise; -1 = synthetic spines (groups of leaves)

  int leaf_count() const { return static_cast<int>(leaf_nodes.size()); }
  std::uint32_t leaf(NodeId n) const { return leaf_of[n.value]; }
  std::uint32_t spine(NodeId n) const { return spine_of_leaf[leaf_of[n.value]]; }

  // The domain of `node` at `level`: "node", "leaf", "spine", or any level of the cluster's
  // own topology. nullopt for a level this cluster does not have: no constraint applies there.
  std::optional<std::uint32_t> DomainOf(const Cluster& cluster, NodeId node,
                                        std::string_view level) const;
};

// Leaves are the cluster's level named "leaf", else its innermost named level, else groups of
// `nodes_per_leaf` consecutive nodes. Spines are the level named "spine", else the level just
// above the leaves, else groups of `leaves_per_spine` consecutive leaves.
RecoveryTopology BuildRecoveryTopology(const Cluster& cluster,
                                       const RecoveryTopologyOptions& options = {});

// Refuses `per_domain` hot spares per leaf when a leaf has no more nodes than that (it would
// be all spares, with no node left to run work); `field` names the setting in the message.
Status CheckSparesFit(const RecoveryTopology& topology, const Cluster& cluster, int per_domain,
                      const std::string& field);

}  // namespace tessera
