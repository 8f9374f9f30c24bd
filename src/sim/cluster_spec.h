// Building a Cluster from what a user passes as --cluster:
//  - a short form "NxG" or "NxG:MODEL" (N nodes of G GPUs; model default "GPU"),
//  - an openb node list CSV (sn,cpu_milli,memory_mib,gpu,model),
//  - Muri's cluster spec CSV
//  (num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node),
//  - a YAML file with named topology levels and node pools (see docs/cluster-spec.md).
// Errors name the file, the key or line, and the reason.
#pragma once

#include <string>
#include <string_view>

#include "core/cluster.h"
#include "core/status.h"

namespace tessera {

Result<Cluster> LoadCluster(const std::string& spec);

// The YAML form from text; `source` names it in error messages (a file name, "<inline>").
Result<Cluster> ParseClusterYaml(std::string_view text, std::string_view source);

}  // namespace tessera
