// What the dashboard draws of each node (GET /v1/nodes/changes, node_changes.h), copied from
// the state under the controller's lock as plain values and turned into JSON after it: the
// full node view (NodesView, GET /v1/nodes) parses every node's GPU and topology JSON and builds
// twenty keys per node, all under the lock, which at 1,250 nodes held it for tens of
// milliseconds per page update. Only a GPU's utilisation is kept of its use (the page draws no
// memory figure), so that a changing memory figure is no change of the row.
//
// Thread-safety: DashboardNodesLocked requires the controller's lock; the rest is pure.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/controller_state.h"

namespace tessera {

struct DashboardGpuUse {
  int gpu = 0;
  double utilization = 0;
  bool operator==(const DashboardGpuUse&) const = default;
};

struct DashboardNode {
  std::string name;
  NodeStatus status = NodeStatus::kReady;
  bool schedulable = false;
  bool cordoned = false;
  bool simulated = false;
  std::string gpu_model;
  int gpu_count = 0;
  // Held milli-GPUs, apart from oversold shares (co-location: lent from online replicas' unused
  // share), in total and per GPU index.
  std::int64_t allocated_milli = 0;
  std::int64_t oversold_milli = 0;
  std::vector<std::int64_t> gpu_allocated_milli;
  std::vector<std::int64_t> gpu_oversold_milli;
  std::vector<DashboardGpuUse> usage;  // GPUs with a figure, in index order
  std::string message;
  bool operator==(const DashboardNode&) const = default;
};

// Every registered node, in name order. REQUIRES: the controller's lock held.
std::vector<DashboardNode> DashboardNodesLocked(const ControllerState& state);

// {name, status, schedulable, cordoned, gpuModel, gpuCount, gpusAllocated, gpuAllocatedMilli,
// oversold, gpuOversoldMilli, simulated, gpuUsage: [{gpu, utilization}], message?}: the keys
// and meanings of GET /v1/nodes.
nlohmann::json DashboardNodeJson(const DashboardNode& node);

}  // namespace tessera
