#include "server/live_task_index.h"

#include <algorithm>

#include "sched/colocation/oversell.h"

namespace tessera {

void LiveTaskIndex::Rebuild(const ControllerState& state, const CycleCluster& cluster,
                            const std::shared_ptr<std::uint64_t>& versions) {
  taken_ = std::make_unique<ClusterState>(*cluster.cluster, versions);
  tasks_.clear();
  by_job_.clear();
  ranks_.clear();
  placements_.clear();
  oversold_.clear();
  unit_tasks_.clear();
  unfit_.clear();
  generation_ = cluster.generation;
  // Node by node in name order, as the snapshot builder takes them.
  for (const auto& [name, ids] : state.live_by_node) {
    for (auto id : ids) Take(state, cluster, id);
  }
}

void LiveTaskIndex::Take(const ControllerState& state, const CycleCluster& cluster,
                         std::int64_t id) {
  auto it = state.tasks.find(id);
  if (it == state.tasks.end() || !IsLive(it->second.state)) return;
  const TaskRecord& t = it->second;
  auto nid = cluster.ids.find(t.node);
  if (nid == cluster.ids.end()) return;
  Taken e;
  e.unit = {t.job_id, t.unit};
  e.rank = t.rank;
  e.node = nid->second;
  e.placement = PlacementOfTask(t, nid->second);
  e.oversold = t.oversold;
  e.applied = static_cast<bool>(taken_->Apply(ChargedPlacement({e.placement}, e.oversold)));
  if (!e.applied) unfit_.insert(id);
  ranks_[e.unit].insert({e.rank, e.node.value, id});
  dirty_.insert(e.unit);
  by_job_[t.job_id].push_back(id);
  tasks_.insert_or_assign(id, std::move(e));
}

void LiveTaskIndex::Give(std::int64_t id) {
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return;
  const Taken& e = it->second;
  if (e.applied) taken_->Release(ChargedPlacement({e.placement}, e.oversold));
  auto r = ranks_.find(e.unit);
  if (r != ranks_.end()) {
    r->second.erase({e.rank, e.node.value, id});
    if (r->second.empty()) ranks_.erase(r);
  }
  dirty_.insert(e.unit);
  unfit_.erase(id);
  tasks_.erase(it);
}

void LiveTaskIndex::RefreshUnit(const UnitKey& unit) {
  auto r = ranks_.find(unit);
  if (r == ranks_.end()) {
    placements_.erase(unit);
    oversold_.erase(unit);
    unit_tasks_.erase(unit);
    return;
  }
  Placement& p = placements_[unit];
  std::vector<std::int64_t>& ids = unit_tasks_[unit];
  p.clear();
  ids.clear();
  bool oversold = false;
  for (const auto& [rank, node, id] : r->second) {
    const Taken& e = tasks_.at(id);
    p.push_back(e.placement);
    ids.push_back(id);
    oversold = oversold || e.oversold;
  }
  if (oversold) {
    oversold_.insert(unit);
  } else {
    oversold_.erase(unit);
  }
}

void LiveTaskIndex::Update(const ControllerState& state, const CycleCluster& cluster,
                           std::vector<std::int64_t> changed, bool all,
                           const std::shared_ptr<std::uint64_t>& versions) {
  if (all || !taken_ || generation_ != cluster.generation) {
    Rebuild(state, cluster, versions);
  } else {
    // Tasks that did not fit are tried again: what held their node may have ended.
    for (auto id : unfit_) {
      if (auto it = tasks_.find(id); it != tasks_.end()) changed.push_back(it->second.unit.first);
    }
    std::sort(changed.begin(), changed.end());
    changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
    for (auto job : changed) {
      auto it = by_job_.find(job);
      if (it == by_job_.end()) continue;
      for (auto id : it->second) Give(id);
      by_job_.erase(it);
    }
    for (auto job : changed) {
      auto it = state.jobs.find(job);
      if (it == state.jobs.end()) continue;
      for (auto id : it->second.tasks) Take(state, cluster, id);
    }
  }
  for (const UnitKey& unit : dirty_) RefreshUnit(unit);
  dirty_.clear();
}

std::vector<std::string> LiveTaskIndex::Problems() const {
  std::vector<std::string> out;
  for (auto id : unfit_) {
    out.push_back("task " + std::to_string(id) + " does not fit its node " +
                  taken_->cluster().node(tasks_.at(id).node).name + " in the working state");
  }
  return out;
}

}  // namespace tessera
