#include "server/pending_queue.h"

#include <algorithm>

#include "sched/elastic/elastic_resize.h"
#include "sched/queue/queue_order.h"
#include "server/service_scaling.h"

namespace tessera {

bool ViewsChangeUncommitted(const JobState& job) {
  return IsAutoscaled(job) || job.resize.has_value() || !job.spec.dependencies.empty();
}

const PendingUnitView* PendingQueue::Find(JobId id) const {
  auto it = units_.find(id.value);
  return it == units_.end() ? nullptr : &it->second;
}

std::size_t PendingQueue::QueuedUnitsOf(std::int64_t id) const {
  auto it = by_job_.find(id);
  return it == by_job_.end() ? 0 : it->second.size();
}

void PendingQueue::Drop(std::int64_t id, std::vector<const JobView*>& gone) {
  uncached_.erase(id);
  restarted_gangs_.erase(id);
  elastic_jobs_.erase(id);
  auto it = by_job_.find(id);
  if (it == by_job_.end()) return;
  for (auto sid : it->second) gone.push_back(&units_.at(sid).view);
}

void PendingQueue::Add(const ControllerState& state, std::int64_t id, const JobState& job, Tick now,
                       std::vector<const JobView*>& added) {
  std::vector<std::uint32_t>& ids = by_job_[id];
  for (PendingUnitView& v : PendingViewsOf(state, id, job, now)) {
    const std::uint32_t sid = v.workload->id.value;
    auto [it, inserted] = units_.insert_or_assign(sid, std::move(v));
    ids.push_back(sid);
    added.push_back(&it->second.view);
  }
}

std::vector<std::int64_t> PendingQueue::Update(const ControllerState& state,
                                               std::vector<std::int64_t> changed, bool all,
                                               const Scheduler& order, Tick now) {
  if (all) {
    units_.clear();
    by_job_.clear();
    order_.clear();
    uncached_.clear();
    restarted_gangs_.clear();
    elastic_jobs_.clear();
    changed.assign(state.active.begin(), state.active.end());
  } else {
    changed.insert(changed.end(), uncached_.begin(), uncached_.end());
    std::sort(changed.begin(), changed.end());
    changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
  }
  const auto before = [&](const JobView* a, const JobView* b) {
    return QueueOrderBefore(order.queue_policy(), *a, *b, now);
  };
  // 1. The views of changed jobs leave the order: found by their place in it (they are still
  //    alive), then taken out in one pass.
  std::vector<const JobView*> gone;
  for (auto id : changed) Drop(id, gone);
  if (!gone.empty()) {
    std::vector<std::size_t> at;
    at.reserve(gone.size());
    for (const JobView* v : gone) {
      auto it = std::lower_bound(order_.begin(), order_.end(), v, before);
      if (it == order_.end() || *it != v) it = std::find(order_.begin(), order_.end(), v);
      at.push_back(static_cast<std::size_t>(it - order_.begin()));
    }
    std::sort(at.begin(), at.end());
    std::size_t kept = 0, next = 0;
    for (std::size_t i = 0; i < order_.size(); ++i) {
      if (next < at.size() && at[next] == i) {
        ++next;
        continue;
      }
      order_[kept++] = order_[i];
    }
    order_.resize(kept);
    for (const JobView* v : gone) units_.erase(v->job->id.value);
  }
  // 2. Their views as they are now, merged in: each found its place by binary search.
  std::vector<const JobView*> added;
  for (auto id : changed) {
    by_job_.erase(id);
    auto it = state.jobs.find(id);
    if (it == state.jobs.end() || !state.active.contains(id)) continue;
    const JobState& job = it->second;
    if (IsElastic(job.workload)) elastic_jobs_.insert(id);
    if (!job.spec.IndependentTasks() &&
        std::any_of(job.units.begin(), job.units.end(), [](const UnitRecord& u) {
          return u.phase == UnitPhase::kPending && u.attempt > 0;
        })) {
      restarted_gangs_.insert(id);
    }
    if (ViewsChangeUncommitted(job)) {
      uncached_.insert(id);
      continue;
    }
    Add(state, id, job, now, added);
  }
  if (!added.empty()) {
    std::sort(added.begin(), added.end(), before);
    std::vector<const JobView*> merged;
    merged.reserve(order_.size() + added.size());
    auto from = order_.begin();
    for (const JobView* v : added) {
      auto to = std::upper_bound(from, order_.end(), v, before);
      merged.insert(merged.end(), from, to);
      merged.push_back(v);
      from = to;
    }
    merged.insert(merged.end(), from, order_.end());
    order_ = std::move(merged);
  }
  return changed;
}

}  // namespace tessera
