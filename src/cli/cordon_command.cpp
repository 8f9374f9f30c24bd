// `tessera cordon NODE`, `tessera uncordon NODE`, `tessera drain NODE`: the operator's node
// operations (POST /v1/nodes/NODE/{cordon,uncordon,drain}; server/node_operations.h). A
// cordoned node takes no new work; drain also moves what runs there off it, through the same
// recovery path as a lost node.
#include <iostream>

#include "cli/commands.h"
#include "cli/live_client.h"
#include "cli/live_commands.h"

namespace tessera::cli {

namespace {

struct NodeOpFlags {
  ClusterFlags cluster;
  std::string node;
};

Status RunNodeOp(const NodeOpFlags& f, const std::string& op) {
  auto url = ResolveServer(f.cluster);
  if (!url) return std::unexpected(url.error());
  ApiClient api(*url);
  auto out = JsonOf(api.Post("/v1/nodes/" + f.node + "/" + op, "{}", "application/json"));
  if (!out) return std::unexpected(out.error());
  std::cout << "node/" << f.node << " " << (op == "uncordon" ? "uncordoned" : op + "ed");
  if (op == "drain") {
    const auto& stopped = (*out)["stopped"];
    std::cout << "; " << stopped.size() << " running job unit(s) moving off";
    for (const auto& j : stopped) std::cout << "\n  " << j.get<std::string>();
  }
  std::cout << "\n";
  return {};
}

void AddNodeOp(CLI::App& app, const std::string& op, const std::string& help) {
  auto flags = std::make_shared<NodeOpFlags>();
  auto* cmd = app.add_subcommand(op, help);
  cmd->add_option("node", flags->node, "Node name")->required();
  AddClusterFlags(cmd, &flags->cluster);
  cmd->callback([flags, op] { SetExitCode(RunOrReport([&] { return RunNodeOp(*flags, op); })); });
}

}  // namespace

void RegisterCordonCommands(CLI::App& app) {
  AddNodeOp(app, "cordon", "Mark a node unschedulable: no new work lands on it");
  AddNodeOp(app, "uncordon", "Make a cordoned node schedulable again");
  AddNodeOp(app, "drain",
            "Cordon a node and move its running work off it (stopped with its grace period, "
            "recovered by each job's recovery policy)");
}

}  // namespace tessera::cli
