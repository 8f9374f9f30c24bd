#include "sched/scheduler.h"

#include <algorithm>
#include <map>

#include "core/rng.h"

namespace tessera {

Result<Scheduler> Scheduler::Create(const SchedulerConfig& config) {
  auto queue = MakeQueuePolicy(config.queue_policy, config.queue);
  if (!queue) return std::unexpected(queue.error());
  auto placement = MakePlacementPolicy(config.placement_policy, config.placement);
  if (!placement) return std::unexpected(placement.error());
  Scheduler s;
  s.queue_ = std::move(*queue);
  s.placement_ = std::move(*placement);
  s.cache_ = std::make_shared<ScoreCache>();
  return s;
}

std::vector<const JobView*> Scheduler::Order(const Snapshot& snap) const {
  struct Keyed {
    int neg_priority;
    OrderKey key;
    Tick submit;
    JobId id;
    const JobView* view;
  };
  std::vector<Keyed> keyed;
  keyed.reserve(snap.jobs.size());
  for (const auto& v : snap.jobs) {
    keyed.push_back({-v.job->priority, queue_->Key(v, snap.now), v.job->submit, v.job->id, &v});
  }
  std::sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) {
    return std::tie(a.neg_priority, a.key, a.submit, a.id) <
           std::tie(b.neg_priority, b.key, b.submit, b.id);
  });
  std::vector<const JobView*> order;
  order.reserve(keyed.size());
  for (const auto& k : keyed) order.push_back(k.view);
  return order;
}

Decisions Scheduler::Schedule(const Snapshot& snap, ClusterState& working) const {
  Decisions out;
  Rng rng(snap.seed);
  const auto order = Order(snap);
  if (queue_->preemptive()) {
    ScheduleWithPreemption(snap, order, working, rng, out);
  } else {
    ScheduleInOrder(snap, order, working, rng, out);
  }
  return out;
}

void Scheduler::ScheduleInOrder(const Snapshot& snap, const std::vector<const JobView*>& order,
                                ClusterState& working, Rng& rng, Decisions& out) const {
  TaskPlacer placer(*placement_, cache_.get());
  // EASY backfill: once the head job is blocked, it holds a reservation at the shadow time
  // (when enough GPUs will have been released by running jobs' expected ends); a later job may
  // start only if it ends by then or fits in the GPUs left over at that time.
  bool blocked = false;
  std::vector<std::pair<Tick, std::int64_t>> bound_ends;  // expected ends of jobs bound now
  auto end_of = [&](const JobView& v) { return v.remaining > 0 ? snap.now + v.remaining : kNever; };
  Tick shadow = kNever;
  std::int64_t spare_at_shadow = 0;
  for (const JobView* v : order) {
    if (v->phase != JobPhase::kPending) continue;
    const Workload& job = *v->job;
    if (blocked) {
      if (!queue_->backfill()) break;
      const bool ends_in_time = v->remaining > 0 && snap.now + v->remaining <= shadow;
      const bool fits_spare = job.TotalGpuMilli() <= spare_at_shadow;
      if (!ends_in_time && !fits_spare) continue;
      if (auto p = placer.PlaceGang(working, job, rng)) {
        if (!ends_in_time) spare_at_shadow -= job.TotalGpuMilli();
        out.push_back({Decision::Kind::kBind, job.id, std::move(*p), {}});
      }
      continue;
    }
    if (auto p = placer.PlaceGang(working, job, rng)) {
      out.push_back({Decision::Kind::kBind, job.id, std::move(*p), {}});
      bound_ends.emplace_back(end_of(*v), job.TotalGpuMilli());
      continue;
    }
    blocked = true;
    if (!queue_->backfill()) break;
    // Shadow time: walk expected completions of running jobs (and jobs bound this cycle)
    // until the free GPUs cover the head job.
    std::vector<std::pair<Tick, std::int64_t>> ends = bound_ends;
    for (const auto& r : snap.jobs) {
      if (r.phase == JobPhase::kRunning) ends.emplace_back(end_of(r), r.job->TotalGpuMilli());
    }
    std::sort(ends.begin(), ends.end());
    std::int64_t free = working.free_gpu_milli();
    const std::int64_t need = job.TotalGpuMilli();
    for (const auto& [end, gpus] : ends) {
      if (free >= need) break;
      free += gpus;
      shadow = end;
    }
    spare_at_shadow = free >= need ? free - need : 0;
    if (free < need) shadow = kNever;
  }
}

void Scheduler::ScheduleWithPreemption(const Snapshot& snap,
                                       const std::vector<const JobView*>& order,
                                       ClusterState& working, Rng& rng, Decisions& out) const {
  TaskPlacer placer(*placement_, cache_.get());
  // 1. Which jobs does the order admit? Place greedily, in order, on the cluster as it would
  //    be with no job running (as Muri's and Tiresias' simulators re-plan).
  for (const JobView* v : order) {
    if (v->phase == JobPhase::kRunning) working.Release(v->placement);
  }
  std::map<JobId, bool> admitted;
  {
    ClusterState plan = working;
    Rng plan_rng(Rng::Mix(snap.seed, 1));
    TaskPlacer plan_placer(*placement_, nullptr);
    for (const JobView* v : order) {
      admitted[v->job->id] = plan_placer.PlaceGang(plan, *v->job, plan_rng).has_value();
    }
  }
  // 2. Admitted running jobs stay where they are.
  std::vector<const JobView*> displaced;
  for (const JobView* v : order) {
    if (v->phase == JobPhase::kRunning && admitted[v->job->id]) {
      if (!working.Apply(v->placement)) displaced.push_back(v);
    }
  }
  // 3. Admitted pending jobs start, in order.
  for (const JobView* v : order) {
    if (v->phase == JobPhase::kPending && admitted[v->job->id]) {
      if (auto p = placer.PlaceGang(working, *v->job, rng)) {
        out.push_back({Decision::Kind::kBind, v->job->id, std::move(*p), {}});
      }
    }
  }
  // 4. Running jobs the order does not admit keep their GPUs if nobody took them; otherwise
  //    they are preempted (and keep their progress).
  for (const JobView* v : order) {
    if (v->phase == JobPhase::kRunning && !admitted[v->job->id]) {
      if (!working.Apply(v->placement)) displaced.push_back(v);
    }
  }
  for (const JobView* v : displaced) {
    out.push_back({Decision::Kind::kPreempt, v->job->id, {},
                   "preempted by " + std::string(queue_->name()) + " order"});
  }
  // 5. Whatever is left may start jobs the order did not admit (implicit backfill).
  for (const JobView* v : order) {
    if (v->phase == JobPhase::kPending && !admitted[v->job->id]) {
      if (auto p = placer.PlaceGang(working, *v->job, rng)) {
        out.push_back({Decision::Kind::kBind, v->job->id, std::move(*p), {}});
      }
    }
  }
}

Tick Scheduler::NextReorderTime(const Snapshot& snap) const {
  Tick next = kNever;
  for (const auto& v : snap.jobs) next = std::min(next, queue_->NextKeyChange(v, snap.now));
  return next;
}

}  // namespace tessera
