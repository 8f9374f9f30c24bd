// `tessera-agent --topology-file FILE`: where the agent's node sits, or, for an agent emulating
// many nodes, every node it emulates with its own name, GPUs and place. YAML or JSON:
//
//   topology: {spine: s1, leaf: l3}        # this agent's node (as --topology spine=s1,leaf=l3)
//
//   nodes:                                 # or one entry per node (`tessera up --cluster`
//     - name: h100-0000                    #  writes this from a cluster YAML)
//       gpus: 8xH100                       # simulated GPUs, for emulated nodes
//       topology: {spine: spine-0, leaf: leaf-0}
//
// Unknown keys, wrong types, duplicate or malformed names are refused with FILE: FIELD: reason.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace tessera {

struct TopologyFileNode {
  std::string name;
  std::string gpus;  // "8xH100"; empty = the agent's --simulate-gpus
  std::map<std::string, std::string> topology;
};

struct TopologyFile {
  std::map<std::string, std::string> topology;  // the top-level place, if given
  std::vector<TopologyFileNode> nodes;          // in file order
};

Result<TopologyFile> ParseTopologyFile(std::string_view text, const std::string& source);
Result<TopologyFile> ReadTopologyFile(const std::string& path);
// The file's text, as ParseTopologyFile reads it back (JSON).
std::string TopologyFileText(const TopologyFile& file);

}  // namespace tessera
