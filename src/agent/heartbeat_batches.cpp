#include "agent/heartbeat_batches.h"

#include <utility>

namespace tessera {

std::vector<NodesHeartbeatRequest> SplitNodesHeartbeat(NodesHeartbeatRequest all,
                                                       std::size_t max_tasks,
                                                       std::size_t max_nodes) {
  std::vector<NodesHeartbeatRequest> parts(1);
  std::size_t tasks = 0;
  for (auto& [node, hb] : all.nodes) {
    NodesHeartbeatRequest* part = &parts.back();
    const std::size_t n = hb.tasks.size();
    // A node that alone exceeds the bound still goes whole, in a part of its own.
    if (!part->nodes.empty() && (tasks + n > max_tasks || part->nodes.size() >= max_nodes)) {
      part = &parts.emplace_back();
      tasks = 0;
    }
    tasks += n;
    part->nodes.emplace(node, std::move(hb));
  }
  return parts;
}

}  // namespace tessera
