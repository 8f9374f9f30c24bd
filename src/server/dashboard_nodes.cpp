#include "server/dashboard_nodes.h"

#include "core/resources.h"
#include "server/gpu_usage_feed.h"

namespace tessera {

using Json = nlohmann::json;

namespace {

// Each live task's share on the GPUs it holds, held and oversold apart (as NodesView counts).
void AddLiveTasks(const ControllerState& state, const std::set<std::int64_t>& live,
                  DashboardNode& row) {
  for (auto id : live) {
    const TaskRecord& t = state.tasks.at(id);
    (t.oversold ? row.oversold_milli : row.allocated_milli) +=
        static_cast<std::int64_t>(t.gpus.size()) * t.gpu_milli;
    auto& per_gpu = t.oversold ? row.gpu_oversold_milli : row.gpu_allocated_milli;
    for (int g : t.gpus) {
      if (g >= 0 && g < std::ssize(per_gpu)) per_gpu[static_cast<std::size_t>(g)] += t.gpu_milli;
    }
  }
}

}  // namespace

std::vector<DashboardNode> DashboardNodesLocked(const ControllerState& state) {
  std::vector<DashboardNode> rows;
  rows.reserve(state.nodes.size());
  for (const auto& [name, ns] : state.nodes) {
    DashboardNode& row = rows.emplace_back();
    row.name = name;
    row.status = ns.rec.status;
    row.schedulable = ns.schedulable();
    row.cordoned = ns.rec.cordoned;
    row.simulated = ns.rec.simulated;
    row.gpu_model = ns.rec.gpu_model;
    row.gpu_count = ns.rec.gpu_count;
    const auto gpus = static_cast<std::size_t>(std::max(0, ns.rec.gpu_count));
    row.gpu_allocated_milli.assign(gpus, 0);
    row.gpu_oversold_milli.assign(gpus, 0);
    if (auto live = state.live_by_node.find(name); live != state.live_by_node.end())
      AddLiveTasks(state, live->second, row);
    row.message = ns.rec.message;
  }
  // Both in name order: one merge pass.
  auto row = rows.begin();
  for (const DeviceUse& d : DeviceUsesLocked(state, state.gpu_usage)) {
    while (row != rows.end() && row->name < d.node) ++row;
    if (row == rows.end()) break;
    if (row->name == d.node) row->usage.push_back({d.gpu, d.utilization});
  }
  return rows;
}

Json DashboardNodeJson(const DashboardNode& node) {
  Json usage = Json::array();
  for (const auto& u : node.usage)
    usage.push_back({{"gpu", u.gpu}, {"utilization", u.utilization}});
  const auto gpus = [](std::int64_t milli) { return static_cast<double>(milli) / kMilliPerGpu; };
  Json j = {{"name", node.name},
            {"status", std::string(NodeStatusName(node.status))},
            {"schedulable", node.schedulable},
            {"cordoned", node.cordoned},
            {"gpuModel", node.gpu_model},
            {"gpuCount", node.gpu_count},
            {"gpusAllocated", gpus(node.allocated_milli)},
            {"gpuAllocatedMilli", node.gpu_allocated_milli},
            {"oversold", gpus(node.oversold_milli)},
            {"gpuOversoldMilli", node.gpu_oversold_milli},
            {"simulated", node.simulated},
            {"gpuUsage", std::move(usage)}};
  if (!node.message.empty()) j["message"] = node.message;
  return j;
}

}  // namespace tessera
