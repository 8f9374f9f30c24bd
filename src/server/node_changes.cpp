#include "server/node_changes.h"

#include <nlohmann/json.hpp>
#include <set>

#include "spec/document.h"

namespace tessera {

NodeChanges::NodeChanges(std::function<std::vector<DashboardNode>()> list_nodes,
                         std::function<std::int64_t()> version, std::chrono::milliseconds max_age)
    : list_nodes_(std::move(list_nodes)), version_(std::move(version)), max_age_(max_age) {
  floor_ = generation_ = std::chrono::duration_cast<std::chrono::microseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
}

void NodeChanges::RefreshLocked() {
  const auto now = std::chrono::steady_clock::now();
  // Read before the rows: a change committed while they are read moves it again.
  const std::int64_t version = version_();
  if (refreshed_ && version == refreshed_version_ && now - *refreshed_ < max_age_) return;
  refreshed_ = now;
  refreshed_version_ = version;
  std::set<std::string> seen;
  for (auto& node : list_nodes_()) {
    seen.insert(node.name);
    auto it = rows_.find(node.name);
    if (it != rows_.end() && it->second.node == node) continue;
    std::string json = DumpJson(DashboardNodeJson(node));
    std::string name = node.name;
    rows_.insert_or_assign(std::move(name), Row{std::move(node), std::move(json), ++generation_});
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

std::string NodeChanges::Since(std::int64_t since) {
  std::lock_guard lock(mu_);
  RefreshLocked();
  const bool full = since < floor_ || since > generation_;
  std::string out = "{\"generation\":" + std::to_string(generation_) +
                    ",\"full\":" + (full ? "true" : "false") + ",\"nodes\":[";
  bool first = true;
  for (const auto& [name, row] : rows_) {
    if (!full && row.generation <= since) continue;
    if (!first) out += ',';
    out += row.json;
    first = false;
  }
  nlohmann::json removed = nlohmann::json::array();
  if (!full) {
    for (const auto& [generation, name] : removed_) {
      if (generation > since) removed.push_back(name);
    }
  }
  out += "],\"removed\":" + DumpJson(removed) + "}";
  return out;
}

}  // namespace tessera
