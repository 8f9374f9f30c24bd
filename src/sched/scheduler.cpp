#include "sched/scheduler.h"

#include <algorithm>
#include <map>
#include <optional>

#include "core/rng.h"
#include "sched/colocation/colocation_pass.h"
#include "sched/placement/topology_gang_placer.h"

namespace tessera {

struct Scheduler::TopologyMemo {
  std::uint64_t fingerprint = 0;
  std::optional<TopologyTree> tree;

  // The tree for `cluster`. A cluster is recognised by its address and a hash of its nodes'
  // domains (O(nodes), far below one placement), so a different cluster never reuses a tree.
  const TopologyTree& For(const Cluster& cluster) {
    std::uint64_t h = reinterpret_cast<std::uintptr_t>(&cluster);
    h = Rng::Mix(h, static_cast<std::uint64_t>(cluster.node_count()));
    h = Rng::Mix(h, cluster.topology().levels.size());
    for (const Node& n : cluster.nodes()) {
      for (std::uint32_t d : n.domain) h = h * 0x100000001B3ULL ^ d;
      h = h * 0x100000001B3ULL ^ 0xFF;
    }
    if (!tree || h != fingerprint) {
      tree = TopologyTree::Build(cluster);
      fingerprint = h;
    }
    return *tree;
  }
};

Result<Scheduler> Scheduler::Create(const SchedulerConfig& config) {
  auto queue = MakeQueuePolicy(config.queue_policy, config.queue);
  if (!queue) return std::unexpected(queue.error());
  auto placement = MakePlacementPolicy(config.placement_policy, config.placement);
  if (!placement) return std::unexpected(placement.error());
  if (config.gang_placement != "topology" && config.gang_placement != "greedy") {
    return InvalidArgument("gang placement '" + config.gang_placement +
                           "' is unknown (known: topology, greedy)");
  }
  Scheduler s;
  if (config.colocation.enabled) {
    if (auto ok = ValidateColocationConfig(config.colocation); !ok) {
      return InvalidArgument("colocation." + ok.error().message);
    }
    if ((*queue)->preemptive()) {
      return InvalidArgument("colocation: needs a queue policy that does not preempt (fifo, "
                             "backfill), not '" + config.queue_policy + "'");
    }
    s.colocation_ = std::make_shared<const ColocationConfig>(config.colocation);
  }
  s.queue_ = std::move(*queue);
  s.placement_ = std::move(*placement);
  if (config.memoize_scores) s.cache_ = std::make_shared<ScoreCache>();
  if (config.gang_placement == "topology") s.topology_ = std::make_shared<TopologyMemo>();
  return s;
}

// The jobs in policy order, produced lazily: a heap over `jobs` merged with the caller's
// pre-sorted pending list, so a cycle that stops early (fifo's blocked head, a full cluster)
// does not pay for ordering jobs it never looks at. Ties: priority, key, submit time, job id.
class Scheduler::JobOrder {
 public:
  JobOrder(const QueuePolicy& policy, const Snapshot& snap)
      : policy_(policy), now_(snap.now), sorted_(snap.pending_in_order) {
    heap_.reserve(snap.jobs.size());
    for (const auto& v : snap.jobs) heap_.push_back(KeyOf(v));
    std::make_heap(heap_.begin(), heap_.end(), Later);
    end_ = heap_.size();
  }
  // The next job in order, or null when all have been taken.
  const JobView* Next() {
    const bool have_sorted = sorted_ != nullptr && next_sorted_ < sorted_->size();
    if (have_sorted && !sorted_head_) sorted_head_ = KeyOf(*(*sorted_)[next_sorted_]);
    if (end_ > 0 && (!have_sorted || Later(*sorted_head_, heap_.front()))) {
      std::pop_heap(heap_.begin(), heap_.begin() + static_cast<long>(end_), Later);
      return heap_[--end_].view;
    }
    if (!have_sorted) return nullptr;
    sorted_head_.reset();
    return (*sorted_)[next_sorted_++];
  }

 private:
  struct Keyed {
    int neg_priority;
    OrderKey key;
    Tick submit;
    JobId id;
    const JobView* view;
  };
  Keyed KeyOf(const JobView& v) const {
    return {-v.job->priority, policy_.Key(v, now_), v.job->submit, v.job->id, &v};
  }
  // "a comes after b": std::*_heap with this comparator keeps the earliest job on top.
  static bool Later(const Keyed& a, const Keyed& b) {
    return std::tie(a.neg_priority, a.key, a.submit, a.id) >
           std::tie(b.neg_priority, b.key, b.submit, b.id);
  }
  const QueuePolicy& policy_;
  Tick now_;
  std::vector<Keyed> heap_;
  std::size_t end_ = 0;
  const std::vector<const JobView*>* sorted_;
  std::size_t next_sorted_ = 0;
  std::optional<Keyed> sorted_head_;
};

Decisions Scheduler::Schedule(const Snapshot& snap, ClusterState& working) const {
  Decisions out;
  Rng rng(snap.seed);
  JobOrder order(*queue_, snap);
  std::optional<TopologyGangPlacer> gangs;
  if (topology_) gangs.emplace(*placement_, topology_->For(working.cluster()));
  const TopologyGangPlacer* g = gangs ? &*gangs : nullptr;
  if (queue_->preemptive()) {
    ScheduleWithPreemption(snap, order, working, rng, g, out);
    return out;
  }
  // Co-location: online jobs placed first (evicting offline tasks), offline ones on oversold
  // credit last; see sched/colocation/colocation_pass.h.
  std::optional<ColocationCycle> colocation;
  if (colocation_) {
    colocation.emplace(*colocation_, snap, working);
    colocation->Before(TaskPlacer(*placement_, cache_.get(), g), rng, out);
  }
  ScheduleInOrder(snap, order, working, rng, g, out, colocation ? &*colocation : nullptr);
  if (colocation) colocation->After(out);
  return out;
}

void Scheduler::ScheduleInOrder(const Snapshot& snap, JobOrder& order, ClusterState& working,
                                Rng& rng, const TopologyGangPlacer* gangs, Decisions& out,
                                const ColocationCycle* colocation) const {
  TaskPlacer placer(*placement_, cache_.get(), gangs);
  // EASY backfill: once the head job is blocked, it holds a reservation at the shadow time
  // (when enough GPUs will have been released by running jobs' expected ends); a later job may
  // start only if it ends by then or fits in the GPUs left over at that time.
  bool blocked = false;
  std::vector<std::pair<Tick, std::int64_t>> bound_ends;  // expected ends of jobs bound now
  auto end_of = [&](const JobView& v) { return v.remaining > 0 ? snap.now + v.remaining : kNever; };
  Tick shadow = kNever;
  std::int64_t spare_at_shadow = 0;
  std::size_t attempts = 0;
  const std::size_t limit = snap.max_attempts_after_block;
  while (const JobView* v = order.Next()) {
    if (v->phase != JobPhase::kPending) continue;
    if (colocation != nullptr && colocation->Owns(*v)) continue;
    const Workload& job = *v->job;
    if (blocked) {
      if (!queue_->backfill() || working.free_gpu_milli() == 0) break;
      if (limit > 0 && ++attempts > limit) break;
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

void Scheduler::ScheduleWithPreemption(const Snapshot& snap, JobOrder& order, ClusterState& working,
                                       Rng& rng, const TopologyGangPlacer* gangs,
                                       Decisions& out) const {
  TaskPlacer placer(*placement_, cache_.get(), gangs);
  // 1. Which jobs does the order admit? Place greedily, in order, on the cluster as it would
  //    be with no job running (as Muri's and Tiresias' simulators re-plan). Jobs are taken
  //    from the order until every running job has been seen and the plan is full: the rest
  //    are pending jobs the order cannot admit.
  std::size_t running_left = 0;
  for (const auto& v : snap.jobs) {
    if (v.phase == JobPhase::kRunning) {
      working.Release(v.placement);
      ++running_left;
    }
  }
  std::vector<const JobView*> taken;
  std::vector<char> admitted;
  {
    // The plan is laid on `working` itself and taken back afterwards (an undo list), so a
    // cycle copies no cluster state.
    ClusterState& plan = working;
    std::vector<Placement> undo;
    Rng plan_rng(Rng::Mix(snap.seed, 1));
    TaskPlacer plan_placer(*placement_, cache_.get(), gangs);
    std::size_t failures = 0;  // pending jobs not admitted once every running job was seen
    const std::size_t limit = snap.max_attempts_after_block;
    while (running_left > 0 || (plan.free_gpu_milli() > 0 && (limit == 0 || failures < limit))) {
      const JobView* v = order.Next();
      if (v == nullptr) break;
      if (v->phase == JobPhase::kRunning) --running_left;
      taken.push_back(v);
      // A running job is admitted where it runs when that still fits: cheaper than placing
      // it afresh, and it keeps step 2 from moving it.
      if (v->phase == JobPhase::kRunning && plan.Apply(v->placement)) {
        undo.push_back(v->placement);
        admitted.push_back(true);
      } else if (auto p = plan_placer.PlaceGang(plan, *v->job, plan_rng)) {
        undo.push_back(std::move(*p));
        admitted.push_back(true);
      } else {
        admitted.push_back(false);
      }
      failures += running_left == 0 && !admitted.back();
    }
    for (const auto& p : undo) plan.Release(p);
  }
  // 2. Admitted running jobs stay where they are.
  std::vector<const JobView*> displaced;
  for (std::size_t i = 0; i < taken.size(); ++i) {
    if (taken[i]->phase == JobPhase::kRunning && admitted[i]) {
      if (!working.Apply(taken[i]->placement)) displaced.push_back(taken[i]);
    }
  }
  // 3. Admitted pending jobs start, in order.
  for (std::size_t i = 0; i < taken.size(); ++i) {
    if (taken[i]->phase == JobPhase::kPending && admitted[i]) {
      if (auto p = placer.PlaceGang(working, *taken[i]->job, rng)) {
        out.push_back({Decision::Kind::kBind, taken[i]->job->id, std::move(*p), {}});
      }
    }
  }
  // 4. Running jobs the order does not admit keep their GPUs if nobody took them; otherwise
  //    they are preempted (and keep their progress).
  for (std::size_t i = 0; i < taken.size(); ++i) {
    if (taken[i]->phase == JobPhase::kRunning && !admitted[i]) {
      if (!working.Apply(taken[i]->placement)) displaced.push_back(taken[i]);
    }
  }
  for (const JobView* v : displaced) {
    out.push_back({Decision::Kind::kPreempt, v->job->id, {},
                   "preempted by " + std::string(queue_->name()) + " order"});
  }
  // 5. Whatever is left may start jobs the order did not admit (implicit backfill), up to
  //    the attempt limit.
  std::size_t attempts = 0;
  const std::size_t limit = snap.max_attempts_after_block;
  auto try_start = [&](const JobView* v) {
    if (working.free_gpu_milli() == 0 && v->job->TotalGpuMilli() > 0) return false;
    if (limit > 0 && ++attempts > limit) return false;
    if (auto p = placer.PlaceGang(working, *v->job, rng)) {
      out.push_back({Decision::Kind::kBind, v->job->id, std::move(*p), {}});
    }
    return true;
  };
  for (std::size_t i = 0; i < taken.size(); ++i) {
    if (taken[i]->phase == JobPhase::kPending && !admitted[i] && !try_start(taken[i])) return;
  }
  while (const JobView* v = order.Next()) {
    if (!try_start(v)) return;
  }
}

Tick Scheduler::NextReorderTime(const Snapshot& snap) const {
  Tick next = kNever;
  for (const auto& v : snap.jobs) next = std::min(next, queue_->NextKeyChange(v, snap.now));
  return next;
}

}  // namespace tessera
