#include "sched/preemption/priority_preemption.h"

#include <algorithm>
#include <tuple>

#include "sched/preemption/victim_search.h"

namespace tessera {
namespace {

// True when `job` can be placed on `working` now; the trial placement is given back.
bool FitsNow(ClusterState& working, const Workload& job, const TaskPlacer& placer,
             std::uint64_t seed) {
  Rng rng(seed);
  auto p = placer.PlaceGang(working, job, rng);
  if (!p) return false;
  working.Release(*p);
  return true;
}

}  // namespace

PriorityVictims ChoosePriorityVictims(const Snapshot& snap, const Workload& job,
                                      ClusterState& working, const TaskPlacer& placer,
                                      std::uint64_t seed, const std::set<JobId>& taken) {
  PriorityVictims out;
  // Gangs being stopped are as good as free for this choice.
  std::vector<const Placement*> released;
  for (const auto& p : snap.releasing) {
    working.Release(p);
    released.push_back(&p);
  }
  auto restore = [&] {
    // Only trial placements, all given back, were made in between: these apply again.
    for (const Placement* p : released) (void)working.Apply(*p);
  };
  if (FitsNow(working, job, placer, seed)) {
    restore();
    out.outcome = PriorityVictims::Outcome::kWait;
    return out;
  }
  // Candidates: lowest priority first; among equals the most recently started (the least work
  // lost since its last checkpoint, in expectation), then the higher id.
  std::vector<const JobView*> candidates;
  for (const auto& v : snap.jobs) {
    if (v.phase != JobPhase::kRunning || !MayEvict(*v.job, job)) continue;       // never online
    if (v.job->priority >= job.priority || taken.contains(v.job->id)) continue;  // for offline
    candidates.push_back(&v);
  }
  // Among equal priorities offline batch work goes first: it is the cheapest to evict.
  auto key = [](const JobView* v) {
    return std::make_tuple(v->job->priority, v->job->kind != WorkloadKind::kBatch, -v->started,
                           -static_cast<std::int64_t>(v->job->id.value));
  };
  std::sort(candidates.begin(), candidates.end(),
            [&](const JobView* a, const JobView* b) { return key(a) < key(b); });
  std::vector<const JobView*> victims;
  bool fits = false;
  for (const JobView* v : candidates) {
    working.Release(v->placement);
    victims.push_back(v);
    if (FitsNow(working, job, placer, seed)) {
      fits = true;
      break;
    }
  }
  if (!fits) {
    for (const JobView* v : victims) (void)working.Apply(v->placement);
    restore();
    return out;
  }
  // Reprieve: give back, most important first, every victim the job can do without.
  std::vector<const JobView*> kept;
  for (auto it = victims.rbegin(); it != victims.rend(); ++it) {
    const bool applied = working.Apply((*it)->placement).has_value();
    if (applied && FitsNow(working, job, placer, seed)) continue;
    if (applied) working.Release((*it)->placement);
    kept.push_back(*it);
  }
  for (const JobView* v : kept) (void)working.Apply(v->placement);
  restore();
  std::reverse(kept.begin(), kept.end());
  out.outcome = PriorityVictims::Outcome::kPreempt;
  out.victims = std::move(kept);
  return out;
}

}  // namespace tessera
