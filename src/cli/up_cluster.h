// `tessera up --cluster FILE`: the all-in-one cluster built from the simulator's cluster file
// (docs/cluster-spec.md): one agent emulates every node of the file with its name, GPU model and
// count and topology place (tessera-agent --simulate-nodes N --topology-file), and tesserad gets
// the file's topology levels. A file that contradicts the cluster the state already holds (a
// node of the same name with other GPUs or another place) is refused naming the node, the
// field and both values.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "spec/topology_file.h"

namespace tessera::cli {

struct ClusterUpPlan {
  std::string source;               // the file
  std::vector<std::string> levels;  // outermost first: tesserad --topology-levels
  TopologyFile nodes;               // what the agent emulates
  std::string summary;              // "40 nodes (32 x 8 H100, 8 x 8 A100, simulated GPUs)"
};

// Reads `path`; refuses a spare pool (`spares_per_domain` > 0) that would fill a leaf domain.
Result<ClusterUpPlan> PlanClusterUp(const std::string& path, int spares_per_domain);

// "spine,leaf", for tesserad --topology-levels.
std::string JoinLevels(const std::vector<std::string>& levels);

// The nodes of GET /v1/nodes against the plan: the first node named in both whose GPUs or place
// differ is an error naming it.
Status CheckClusterAgainstNodes(const ClusterUpPlan& plan, const nlohmann::json& nodes);

}  // namespace tessera::cli
