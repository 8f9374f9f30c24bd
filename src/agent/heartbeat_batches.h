// One agent emulating many nodes reports them all in one batched heartbeat; at thousands of
// nodes running thousands of tasks that body outgrows the controller's 1 MiB request limit (a
// task report is about 150 bytes: 10,000 tasks are 1.5 MB). So the batch goes in parts, each
// of at most kMaxTasksPerHeartbeat task reports and kMaxNodesPerHeartbeat nodes; every node
// lands whole in one part.
#pragma once

#include <cstddef>
#include <vector>

#include "spec/protocol.h"

namespace tessera {

inline constexpr std::size_t kMaxTasksPerHeartbeat = 2500;
inline constexpr std::size_t kMaxNodesPerHeartbeat = 2000;
inline constexpr std::size_t kMaxAliveNamesPerHeartbeat = 20000;

// `all` in parts, in node-name order; at least one part (empty when `all` is). A delta's fields
// go with every part, its `alive` names spread over them.
std::vector<NodesHeartbeatRequest> SplitNodesHeartbeat(
    NodesHeartbeatRequest all, std::size_t max_tasks = kMaxTasksPerHeartbeat,
    std::size_t max_nodes = kMaxNodesPerHeartbeat);

}  // namespace tessera
