#include "server/queue_view.h"

#include <functional>
#include <optional>

#include "sched/quota/fair_share_cycle.h"

namespace tessera {

namespace {

using Json = nlohmann::json;

double Gpus(std::int64_t milli) { return static_cast<double>(milli) / kMilliPerGpu; }

QueueUsage& operator+=(QueueUsage& a, const QueueUsage& b) {
  a.pending_jobs += b.pending_jobs;
  a.active_jobs += b.active_jobs;
  a.finished_jobs += b.finished_jobs;
  a.allocated += b.allocated;
  a.pending_gpu_milli += b.pending_gpu_milli;
  return a;
}

Json Row(const std::string& name, const QueueUsage& u, const Resources& capacity) {
  return {{"name", name},
          {"pendingJobs", u.pending_jobs},
          {"activeJobs", u.active_jobs},
          {"finishedJobs", u.finished_jobs},
          {"gpusAllocated", Gpus(u.allocated.gpu_milli)},
          {"pendingGpus", Gpus(u.pending_gpu_milli)},
          {"dominantShare", WeightedDominantShare(u.allocated, capacity, 1.0)}};
}

}  // namespace

Json QueueRows(const QueueTreeSpec* tree, const QueueTree* built, const Resources& capacity,
               const std::map<std::string, QueueUsage>& usage) {
  Json rows = Json::array();
  std::map<std::string, bool> shown;
  // The structure against a cluster large enough for any absolute guarantee (as the
  // controller checks the tree at start); the amounts against the registered capacity, which
  // may not hold the guarantees yet (no nodes, or fewer than the tree guarantees).
  constexpr std::int64_t kAny = std::int64_t{1} << 40;
  std::optional<QueueTree> shape_tree, resolved_tree;
  if (tree != nullptr) {
    if (auto t = QueueTree::Build(*tree, Resources{kAny, kAny, kAny})) shape_tree = std::move(*t);
    if (built != nullptr && built->capacity() == capacity) {
      resolved_tree = *built;
    } else if (auto t = QueueTree::Build(*tree, capacity)) {
      resolved_tree = std::move(*t);
    }
  }
  const QueueTree* shape = shape_tree ? &*shape_tree : nullptr;
  const QueueTree* resolved = resolved_tree ? &*resolved_tree : nullptr;
  if (shape != nullptr) {
    // Depth first, so that each parent comes right before its subtree.
    std::function<QueueUsage(int, int)> visit = [&](int i, int depth) {
      const QueueNode& node = shape->node(i);
      const std::size_t at = rows.size();
      rows.push_back(Json());
      QueueUsage total;
      if (auto it = usage.find(node.path); it != usage.end()) total += it->second;
      for (int child : node.children) total += visit(child, depth + 1);
      Json row = Row(node.path, total, capacity);
      row["parent"] = node.parent < 0 ? "" : shape->node(node.parent).path;
      row["depth"] = depth;
      row["leaf"] = node.leaf();
      row["weight"] = node.weight;
      row["priority"] = node.priority;
      if (const int r = resolved != nullptr ? resolved->Find(node.path) : -1; r >= 0) {
        const QueueNode& amounts = resolved->node(r);
        row["guaranteedGpus"] = Gpus(amounts.guaranteed.gpu_milli);
        row["entitlement"] = amounts.entitlement;
        if (amounts.borrow_limit.gpu_milli != kUnlimited)
          row["borrowLimitGpus"] = Gpus(amounts.borrow_limit.gpu_milli);
      }
      rows[at] = std::move(row);
      shown[node.path] = true;
      return total;
    };
    for (int root : shape->roots()) visit(root, 0);
  }
  for (const auto& [name, u] : usage) {
    if (!shown.contains(name)) rows.push_back(Row(name, u, capacity));
  }
  return rows;
}

}  // namespace tessera
