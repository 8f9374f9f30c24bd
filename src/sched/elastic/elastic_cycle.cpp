#include "sched/elastic/elastic_cycle.h"

#include <algorithm>
#include <tuple>

namespace tessera {

ElasticCycle::ElasticCycle(const Snapshot& snap, const TaskPlacer& placer)
    : snap_(snap), placer_(placer) {
  for (const auto& v : snap.jobs) {
    if (v.phase == JobPhase::kRunning && IsElastic(*v.job) && !v.placement.empty()) {
      running_.push_back(&v);
    }
  }
}

std::optional<Placement> ElasticCycle::PlaceAtMinimum(ClusterState& state, const Workload& job,
                                                      Rng& rng) const {
  if (!IsElastic(job) || MinWorkers(job) >= job.groups[0].count) return std::nullopt;
  return placer_.PlaceGang(state, WithWorkers(job, MinWorkers(job)), rng);
}

const Placement& ElasticCycle::Current(const JobView& v, const Decisions& out) const {
  auto it = resized_.find(v.job->id.value);
  return it == resized_.end() ? v.placement : out[it->second].placement;
}

void ElasticCycle::Record(const JobView& v, Placement p, Decisions& out) {
  auto it = resized_.find(v.job->id.value);
  if (it != resized_.end()) {
    out[it->second].placement = std::move(p);
    return;
  }
  resized_[v.job->id.value] = out.size();
  out.push_back({Decision::Kind::kResize, v.job->id, std::move(p), {}});
}

std::optional<Placement> ElasticCycle::ShrinkFor(ClusterState& state, const Workload& head,
                                                 Rng& rng, Decisions& out) {
  return ShrinkFor(state, head, rng, out,
                   [&](const JobView& v) { return v.job->priority <= head.priority; });
}

std::optional<Placement> ElasticCycle::ShrinkFor(
    ClusterState& state, const Workload& head, Rng& rng, Decisions& out,
    const std::function<bool(const JobView&)>& may_shrink) {
  std::vector<const JobView*> victims;
  for (const JobView* v : running_) {
    if (may_shrink(*v) && static_cast<int>(Current(*v, out).size()) > MinWorkers(*v->job)) {
      victims.push_back(v);
    }
  }
  if (victims.empty()) return std::nullopt;
  std::sort(victims.begin(), victims.end(), [](const JobView* a, const JobView* b) {
    return std::make_tuple(a->job->priority, -a->started,
                           -static_cast<std::int64_t>(a->job->id.value)) <
           std::make_tuple(b->job->priority, -b->started,
                           -static_cast<std::int64_t>(b->job->id.value));
  });
  std::vector<std::pair<const JobView*, Placement>> undo;  // (job, placement before)
  for (const JobView* v : victims) {
    const Placement before = Current(*v, out);
    ShrinkElastic(state, before, MinWorkers(*v->job));
    undo.emplace_back(v, before);
    if (auto p = placer_.PlaceGang(state, head, rng)) {
      for (auto& [job, old] : undo) {
        Record(*job, Placement(old.begin(), old.begin() + MinWorkers(*job->job)), out);
      }
      return p;
    }
  }
  for (auto it = undo.rbegin(); it != undo.rend(); ++it) {
    const Placement& old = it->second;
    const Placement tail(old.begin() + MinWorkers(*it->first->job), old.end());
    (void)state.Apply(tail);  // exactly what ShrinkElastic gave back, so it fits
  }
  return std::nullopt;
}

bool ElasticCycle::KeepShrunk(ClusterState& state, const JobView& running, Decisions& out) {
  if (!IsElastic(*running.job)) return false;
  auto kept = ApplyLongestPrefix(state, Current(running, out), MinWorkers(*running.job));
  if (!kept) return false;
  Record(running, std::move(*kept), out);
  return true;
}

bool ElasticCycle::ApplyUpToNominal(ClusterState& state, const JobView& running) {
  const Placement& p = running.placement;
  if (!IsElastic(*running.job) || static_cast<int>(p.size()) <= running.job->groups[0].count) {
    return static_cast<bool>(state.Apply(p));
  }
  const Placement nominal(p.begin(), p.begin() + running.job->groups[0].count);
  if (!state.Apply(nominal)) return false;
  lent_.push_back(&running);
  return true;
}

void ElasticCycle::ReturnLent(ClusterState& state, Decisions& out) {
  for (const JobView* v : lent_) {
    const Placement& p = v->placement;
    std::size_t kept = static_cast<std::size_t>(v->job->groups[0].count);
    while (kept < p.size() && state.Apply({p[kept]})) ++kept;
    if (kept < p.size()) Record(*v, Placement(p.begin(), p.begin() + static_cast<long>(kept)), out);
  }
  lent_.clear();
}

void ElasticCycle::Grow(ClusterState& state, BackfillGate* gate, Rng& /*cycle*/, Decisions& out,
                        GrowthLimit* limit) {
  struct Candidate {
    const Workload* job;
    const JobView* running;  // null: bound this cycle (out[bound])
    std::size_t bound;
  };
  std::vector<Candidate> c;
  for (const JobView* v : running_) {
    // A job preempted this cycle is not running any more.
    c.push_back({v->job, v, 0});
  }
  for (const auto& [job, index] : bound_) {
    if (IsElastic(*job)) c.push_back({job, nullptr, index});
  }
  if (c.empty() || state.free_gpu_milli() == 0) return;
  std::sort(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) {
    return std::make_tuple(-a.job->priority, a.job->submit, a.job->id.value) <
           std::make_tuple(-b.job->priority, b.job->submit, b.job->id.value);
  });
  std::vector<std::uint32_t> preempted;
  for (const auto& d : out) {
    if (d.kind == Decision::Kind::kPreempt) preempted.push_back(d.job.value);
  }
  std::sort(preempted.begin(), preempted.end());
  if (gate != nullptr) gate->Fence(state);
  for (const Candidate& k : c) {
    if (state.free_gpu_milli() == 0) break;
    if (std::binary_search(preempted.begin(), preempted.end(), k.job->id.value)) continue;
    const Placement& current = k.running ? Current(*k.running, out) : out[k.bound].placement;
    const int from = static_cast<int>(current.size());
    const int most = limit != nullptr ? limit->MaxWorkers(*k.job, from) : 0;
    if (limit != nullptr && most <= from) continue;
    auto grown = GrowElastic(state, *k.job, current, placer_, most);
    if (!grown) continue;
    if (limit != nullptr) limit->Grew(*k.job, from, static_cast<int>(grown->size()));
    if (k.running) {
      Record(*k.running, std::move(*grown), out);
    } else {
      out[k.bound].placement = std::move(*grown);
    }
  }
  if (gate != nullptr) gate->Unfence(state);
}

}  // namespace tessera
