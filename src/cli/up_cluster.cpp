#include "cli/up_cluster.h"

#include <map>

#include "sched/recovery/recovery_topology.h"
#include "sim/cluster_spec.h"

namespace tessera::cli {

namespace {

std::string Place(const std::map<std::string, std::string>& topology) {
  std::string out;
  for (const auto& [level, domain] : topology)
    out += (out.empty() ? "" : ",") + level + "=" + domain;
  return out.empty() ? "none" : out;
}

}  // namespace

std::string JoinLevels(const std::vector<std::string>& levels) {
  std::string out;
  for (const auto& l : levels) out += (out.empty() ? "" : ",") + l;
  return out;
}

Result<ClusterUpPlan> PlanClusterUp(const std::string& path, int spares_per_domain) {
  auto cluster = LoadCluster(path);
  if (!cluster) return InvalidArgument("--cluster: " + cluster.error().message);
  if (cluster->node_count() == 0) return InvalidArgument("--cluster: " + path + " has no nodes");
  if (cluster->node_count() > 100000)
    return InvalidArgument("--cluster: at most 100,000 nodes can be emulated");
  if (spares_per_domain > 0) {
    if (auto s = CheckSparesFit(BuildRecoveryTopology(*cluster), *cluster, spares_per_domain,
                                "--spares-per-domain");
        !s) {
      return std::unexpected(s.error());
    }
  }
  ClusterUpPlan plan;
  plan.source = path;
  const Topology& topology = cluster->topology();
  plan.levels = topology.levels;
  std::map<std::string, int> shapes;
  for (const Node& n : cluster->nodes()) {
    TopologyFileNode node;
    node.name = n.name;
    const std::string model = cluster->models().Name(n.gpu_model);
    node.gpus = std::to_string(n.gpu_count) + "x" + model;
    for (std::size_t l = 0; l < topology.levels.size() && l < n.domain.size(); ++l)
      node.topology[topology.levels[l]] = topology.domain_names[l][n.domain[l]];
    ++shapes[std::to_string(n.gpu_count) + " " + model];
    plan.nodes.nodes.push_back(std::move(node));
  }
  plan.summary = std::to_string(cluster->node_count()) + " nodes (";
  for (const auto& [shape, count] : shapes)
    plan.summary += std::to_string(count) + " x " + shape + ", ";
  plan.summary += "simulated GPUs)";
  return plan;
}

Status CheckClusterAgainstNodes(const ClusterUpPlan& plan, const nlohmann::json& nodes) {
  std::map<std::string, const TopologyFileNode*> by_name;
  for (const auto& n : plan.nodes.nodes) by_name[n.name] = &n;
  for (const auto& n : nodes) {
    auto it = by_name.find(n.value("name", ""));
    if (it == by_name.end()) continue;
    const TopologyFileNode& want = *it->second;
    const std::string has_gpus =
        std::to_string(n.value("gpuCount", 0)) + "x" + n.value("gpuModel", std::string());
    const std::string why = plan.source + ": node " + want.name + ": ";
    if (has_gpus != want.gpus && !(n.value("gpuCount", 0) == 0 && want.gpus.starts_with("0x"))) {
      return FailedPrecondition(why + "gpus: the cluster in this state has " + has_gpus +
                                ", the file says " + want.gpus +
                                " (use another --state, or the cluster's own file)");
    }
    std::map<std::string, std::string> has_place;
    if (n.contains("topology") && n["topology"].is_object()) {
      for (const auto& [level, domain] : n["topology"].items()) {
        if (domain.is_string()) has_place[level] = domain.get<std::string>();
      }
    }
    if (has_place != want.topology) {
      return FailedPrecondition(why + "topology: the cluster in this state has " +
                                Place(has_place) + ", the file says " + Place(want.topology) +
                                " (use another --state, or the cluster's own file)");
    }
  }
  return {};
}

}  // namespace tessera::cli
