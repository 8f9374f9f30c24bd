#include "server/node_changes.h"

#include <set>

namespace tessera {

using Json = nlohmann::json;

namespace {

// The fields the dashboard draws (cluster.js), in the row's order.
Json DashboardRow(const Json& node) {
  Json row = Json::object();
  for (const char* key :
       {"name", "status", "schedulable", "cordoned", "gpuModel", "gpuCount", "gpusAllocated",
        "gpuAllocatedMilli", "simulated", "gpuUsage", "message"}) {
    if (auto it = node.find(key); it != node.end()) row[key] = *it;
  }
  return row;
}

}  // namespace

NodeChanges::NodeChanges(std::function<Json()> list_nodes, std::chrono::milliseconds max_age)
    : list_nodes_(std::move(list_nodes)), max_age_(max_age) {
  floor_ = generation_ = std::chrono::duration_cast<std::chrono::microseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
}

void NodeChanges::RefreshLocked() {
  const auto now = std::chrono::steady_clock::now();
  if (refreshed_ && now - *refreshed_ < max_age_) return;
  refreshed_ = now;
  std::set<std::string> seen;
  for (const auto& node : list_nodes_()) {
    Json row = DashboardRow(node);
    const std::string name = row.value("name", "");
    seen.insert(name);
    auto it = rows_.find(name);
    if (it != rows_.end() && it->second.view == row) continue;
    rows_.insert_or_assign(name, Row{std::move(row), ++generation_});
  }
  for (auto it = rows_.begin(); it != rows_.end();) {
    if (seen.contains(it->first)) {
      ++it;
      continue;
    }
    removed_.emplace_back(++generation_, it->first);
    it = rows_.erase(it);
  }
  while (removed_.size() > kRemovedKept) {
    floor_ = removed_.front().first;
    removed_.pop_front();
  }
}

Json NodeChanges::Since(std::int64_t since) {
  std::lock_guard lock(mu_);
  RefreshLocked();
  const bool full = since < floor_ || since > generation_;
  Json nodes = Json::array();
  for (const auto& [name, row] : rows_) {
    if (full || row.generation > since) nodes.push_back(row.view);
  }
  Json removed = Json::array();
  if (!full) {
    for (const auto& [generation, name] : removed_) {
      if (generation > since) removed.push_back(name);
    }
  }
  return {{"generation", generation_},
          {"full", full},
          {"nodes", std::move(nodes)},
          {"removed", std::move(removed)}};
}

}  // namespace tessera
