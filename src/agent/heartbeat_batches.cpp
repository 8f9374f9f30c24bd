#include "agent/heartbeat_batches.h"

#include <algorithm>
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
  // A delta's names of nodes kept alive: up to kMaxAliveNamesPerHeartbeat a part, first parts
  // first (a name is about 15 bytes).
  std::size_t part = 0;
  for (std::size_t first = 0; first < all.alive.size(); first += kMaxAliveNamesPerHeartbeat) {
    if (part == parts.size()) parts.emplace_back();
    const std::size_t end = std::min(all.alive.size(), first + kMaxAliveNamesPerHeartbeat);
    parts[part++].alive.assign(all.alive.begin() + static_cast<std::ptrdiff_t>(first),
                               all.alive.begin() + static_cast<std::ptrdiff_t>(end));
  }
  for (auto& p : parts) {
    p.delta = all.delta;
    p.since = all.since;
    p.agent_url = all.agent_url;
  }
  return parts;
}

}  // namespace tessera
