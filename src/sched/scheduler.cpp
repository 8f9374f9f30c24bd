#include "sched/scheduler.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "core/rng.h"
#include "sched/backfill/backfill_gate.h"
#include "sched/colocation/colocation_pass.h"
#include "sched/elastic/elastic_cycle.h"
#include "sched/placement/gpu_model_speed.h"
#include "sched/placement/topology_gang_placer.h"
#include "sched/preemption/priority_preemption.h"
#include "sched/queue/queue_order.h"
#include "sched/quota/fair_share_cycle.h"

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
  if (config.priority_preemption && (*queue)->preemptive()) {
    return InvalidArgument("priority preemption applies to fifo and backfill; queue policy '" +
                           config.queue_policy + "' preempts by its own order");
  }
  if (config.priority_preemption && IsFairSharePolicy(config.queue_policy)) {
    return InvalidArgument("priority preemption applies to fifo and backfill; queue policy '" +
                           config.queue_policy + "' preempts by priority within each queue itself");
  }
  const auto reservation = ParseBackfillReservation(config.backfill_reservation);
  if (!reservation) {
    return InvalidArgument("backfill reservation '" + config.backfill_reservation +
                           "' is unknown (known: domain, gpu-count)");
  }
  if (config.gpu_model_choice != "fastest" && config.gpu_model_choice != "blind") {
    return InvalidArgument("gpu model choice '" + config.gpu_model_choice +
                           "' is unknown (known: fastest, blind)");
  }
  Scheduler s;
  s.priority_preemption_ = config.priority_preemption;
  s.elastic_ = config.elastic;
  // Topology-blind gang placement has no domain to reserve: it counts GPUs, as EASY does.
  s.backfill_reservation_ =
      config.gang_placement == "greedy" ? BackfillReservation::kGpuCount : *reservation;
  s.fastest_model_first_ = config.gpu_model_choice == "fastest";
  if (config.colocation.enabled) {
    if (auto ok = ValidateColocationConfig(config.colocation); !ok) {
      return InvalidArgument("colocation." + ok.error().message);
    }
    if ((*queue)->preemptive()) {
      return InvalidArgument(
          "colocation: needs a queue policy that does not preempt (fifo, "
          "backfill), not '" +
          config.queue_policy + "'");
    }
    if (IsFairSharePolicy(config.queue_policy)) {
      return InvalidArgument("colocation: queue policy '" + config.queue_policy +
                             "' schedules by its queue tree alone; use fifo or backfill (drf's own "
                             "victim choice never evicts online work for offline work)");
    }
    if (config.priority_preemption) {
      return InvalidArgument(
          "colocation: priority preemption would let a higher-priority offline job preempt "
          "online replicas, which are never evicted for offline work; turn one of them off");
    }
    s.colocation_ = std::make_shared<const ColocationConfig>(config.colocation);
  }
  s.queue_ = std::move(*queue);
  s.placement_ = std::move(*placement);
  if (config.memoize_scores) {
    s.cache_ = std::make_shared<ScoreCache>();
    s.cache_->set_index_classes(config.placement_index);
  }
  if (config.gang_placement == "topology") s.topology_ = std::make_shared<TopologyMemo>();
  if (IsFairSharePolicy(config.queue_policy)) {
    if (!config.queues) {
      return InvalidArgument("queue policy '" + config.queue_policy + "' needs a queue tree");
    }
    s.queues_ = config.queues;
    s.victims_ =
        config.queue_policy == "drf-naive" ? VictimOrder::kNaive : VictimOrder::kCheckpointAware;
  }
  return s;
}

// The jobs in policy order, produced lazily: a heap over `jobs` merged with the caller's
// pre-sorted pending list, so a cycle that stops early (fifo's blocked head, a full cluster)
// does not pay for ordering jobs it never looks at. `pending_only`: the running jobs of
// `jobs` are left out (a caller that skips them anyway need not order them).
class Scheduler::JobOrder {
 public:
  JobOrder(const QueuePolicy& policy, const Snapshot& snap, bool pending_only = false)
      : policy_(policy), now_(snap.now), sorted_(snap.pending_in_order) {
    heap_.reserve(snap.jobs.size());
    for (const auto& v : snap.jobs) {
      if (!pending_only || v.phase == JobPhase::kPending) heap_.push_back(KeyOf(v));
    }
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
  OrderPlace KeyOf(const JobView& v) const { return PlaceOf(policy_, v, now_); }
  const QueuePolicy& policy_;
  Tick now_;
  std::vector<OrderPlace> heap_;
  std::size_t end_ = 0;
  const std::vector<const JobView*>* sorted_;
  std::size_t next_sorted_ = 0;
  std::optional<OrderPlace> sorted_head_;
};

Decisions Scheduler::Schedule(const Snapshot& snap, ClusterState& working) const {
  Decisions out;
  Rng rng(snap.seed);
  std::optional<TopologyGangPlacer> gangs;
  if (topology_) gangs.emplace(*placement_, topology_->For(working.cluster()));
  const TopologyGangPlacer* g = gangs ? &*gangs : nullptr;
  if (queues_) {  // drf, drf-naive: hierarchical fair share with reclaim and preemption
    TaskPlacer placer(*placement_, cache_.get(), g);
    std::optional<ElasticCycle> elastic;
    if (elastic_) elastic.emplace(snap, placer);
    ScheduleFairShare(snap, *queues_, victims_, working, placer, rng, out, {},
                      elastic ? &*elastic : nullptr);
    return out;
  }
  if (queue_->preemptive()) {
    JobOrder order(*queue_, snap);
    ScheduleWithPreemption(snap, order, working, rng, g, out);
    return out;
  }
  // The in-order cycle looks at pending jobs only: the running ones are not ordered.
  JobOrder order(*queue_, snap, /*pending_only=*/true);
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
  placer.set_fastest_model_first(fastest_model_first_);
  // Once the head job is blocked it holds a reservation (backfill/backfill_gate.h); a later job
  // starts only where the gate says it cannot delay the head.
  BackfillGate gate(backfill_reservation_, placer);
  std::optional<ElasticCycle> elastic;
  if (elastic_) elastic.emplace(snap, placer);
  bool blocked = false;
  struct Bound {
    Tick end;           // expected
    std::size_t index;  // in out
    std::int64_t gpu_milli;
  };
  std::vector<Bound> bound_ends;
  auto end_of = [&](const JobView& v) { return v.remaining > 0 ? snap.now + v.remaining : kNever; };
  std::size_t attempts = 0;
  const std::size_t limit = snap.max_attempts_after_block;
  std::set<JobId> preempted;  // this cycle, by priority preemption
  while (const JobView* v = order.Next()) {
    if (v->phase != JobPhase::kPending) continue;
    if (colocation != nullptr && colocation->Owns(*v)) continue;
    const Workload& job = *v->job;
    if (blocked) {
      if (!queue_->backfill() || working.free_gpu_milli() == 0) break;
      if (limit > 0 && ++attempts > limit) break;
      // The estimate holds on the slowest model the job accepts, wherever it lands.
      const Tick estimate = v->remaining > 0
                                ? static_cast<Tick>(static_cast<double>(v->remaining) /
                                                    SlowestSpeed(working.cluster(), job))
                                : 0;
      if (auto p = gate.TryStart(working, job, estimate, snap.now, rng)) {
        out.push_back({Decision::Kind::kBind, job.id, std::move(*p), {}});
      }
      continue;
    }
    std::optional<Placement> p = placer.PlaceGang(working, job, rng);
    if (!p && elastic) p = elastic->PlaceAtMinimum(working, job, rng);
    if (!p && elastic) p = elastic->ShrinkFor(working, job, rng, out);
    if (p) {
      out.push_back({Decision::Kind::kBind, job.id, std::move(*p), {}});
      if (elastic) elastic->NoteBound(job, out.size() - 1);
      // Its expected end: slower on a slower model, and (by the linear estimate, an upper
      // bound for sub-linear scaling) on fewer workers than its nominal size.
      const Placement& placed = out.back().placement;
      double stretch = 1.0 / PlacementSpeed(working.cluster(), job, placed);
      if (IsElastic(job) && !placed.empty()) {
        stretch *= static_cast<double>(job.groups[0].count) / static_cast<double>(placed.size());
      }
      const Tick end =
          v->remaining > 0
              ? snap.now + static_cast<Tick>(static_cast<double>(v->remaining) * stretch)
              : kNever;
      bound_ends.push_back({end, out.size() - 1, GpuMilliOf(out.back().placement)});
      continue;
    }
    if (priority_preemption_ &&
        PreemptForPriority(snap, job, working, placer, rng, preempted, out)) {
      bound_ends.push_back({end_of(*v), out.size() - 1, GpuMilliOf(out.back().placement)});
      continue;
    }
    blocked = true;
    if (!queue_->backfill()) break;
    std::vector<ExpectedEnd> ends;
    ends.reserve(bound_ends.size() + snap.jobs.size());
    for (const auto& b : bound_ends) ends.push_back({b.end, &out[b.index].placement, b.gpu_milli});
    for (const auto& r : snap.jobs) {
      if (r.phase != JobPhase::kRunning || preempted.contains(r.job->id)) continue;
      const Placement& now_at = elastic ? elastic->Current(r, out) : r.placement;
      ends.push_back({end_of(r), &now_at, GpuMilliOf(now_at)});
    }
    gate.Block(working, job, std::move(ends), snap.now, rng);
  }
  if (elastic) elastic->Grow(working, &gate, rng, out);
}

void Scheduler::ScheduleWithPreemption(const Snapshot& snap, JobOrder& order, ClusterState& working,
                                       Rng& rng, const TopologyGangPlacer* gangs,
                                       Decisions& out) const {
  TaskPlacer placer(*placement_, cache_.get(), gangs);
  placer.set_fastest_model_first(fastest_model_first_);
  std::optional<ElasticCycle> elastic;
  if (elastic_) elastic.emplace(snap, placer);
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
    plan_placer.set_fastest_model_first(fastest_model_first_);
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
  // An elastic job that no longer fits whole keeps what still fits, down to its minimum.
  auto keep = [&](const JobView* v) {
    if (elastic ? elastic->ApplyUpToNominal(working, *v)
                : static_cast<bool>(working.Apply(v->placement))) {
      return;
    }
    if (!elastic || !elastic->KeepShrunk(working, *v, out)) displaced.push_back(v);
  };
  for (std::size_t i = 0; i < taken.size(); ++i) {
    if (taken[i]->phase == JobPhase::kRunning && admitted[i]) keep(taken[i]);
  }
  // 3. Admitted pending jobs start, in order.
  for (std::size_t i = 0; i < taken.size(); ++i) {
    if (taken[i]->phase == JobPhase::kPending && admitted[i]) {
      std::optional<Placement> p = placer.PlaceGang(working, *taken[i]->job, rng);
      if (!p && elastic) p = elastic->PlaceAtMinimum(working, *taken[i]->job, rng);
      if (p) {
        out.push_back({Decision::Kind::kBind, taken[i]->job->id, std::move(*p), {}});
        if (elastic) elastic->NoteBound(*taken[i]->job, out.size() - 1);
      }
    }
  }
  // 4. Running jobs the order does not admit keep their GPUs if nobody took them; otherwise
  //    they are preempted (and keep their progress).
  for (std::size_t i = 0; i < taken.size(); ++i) {
    if (taken[i]->phase == JobPhase::kRunning && !admitted[i]) keep(taken[i]);
  }
  if (elastic) elastic->ReturnLent(working, out);
  for (const JobView* v : displaced) {
    out.push_back({Decision::Kind::kPreempt,
                   v->job->id,
                   {},
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
      if (elastic) elastic->NoteBound(*v->job, out.size() - 1);
    }
    return true;
  };
  [&] {
    for (std::size_t i = 0; i < taken.size(); ++i) {
      if (taken[i]->phase == JobPhase::kPending && !admitted[i] && !try_start(taken[i])) return;
    }
    while (const JobView* v = order.Next()) {
      if (!try_start(v)) return;
    }
  }();
  if (elastic) elastic->Grow(working, nullptr, rng, out);
}

bool Scheduler::PreemptForPriority(const Snapshot& snap, const Workload& job, ClusterState& working,
                                   const TaskPlacer& placer, Rng& rng, std::set<JobId>& preempted,
                                   Decisions& out) const {
  const auto choice = ChoosePriorityVictims(snap, job, working, placer,
                                            Rng::Mix(snap.seed, 2 + job.id.value), preempted);
  if (choice.outcome != PriorityVictims::Outcome::kPreempt) return false;
  for (const JobView* victim : choice.victims) {
    working.Release(victim->placement);
    preempted.insert(victim->job->id);
    out.push_back({Decision::Kind::kPreempt,
                   victim->job->id,
                   {},
                   "preempted for job of priority " + std::to_string(job.priority) + " (priority " +
                       std::to_string(victim->job->priority) + ")",
                   false,
                   job.id});
  }
  if (auto p = placer.PlaceGang(working, job, rng)) {
    out.push_back({Decision::Kind::kBind, job.id, std::move(*p), {}});
    return true;
  }
  // The job also needs GPUs of gangs still being stopped: the victims hold theirs until they
  // are gone too, and the job waits at the head of the queue.
  for (const JobView* victim : choice.victims) (void)working.Apply(victim->placement);
  return false;
}

Tick Scheduler::NextReorderTime(const Snapshot& snap) const {
  Tick next = kNever;
  for (const auto& v : snap.jobs) next = std::min(next, queue_->NextKeyChange(v, snap.now));
  if (queues_) {  // drf: a running job becomes reclaimable when it has run the grace period
    for (const auto& v : snap.jobs) {
      const Tick ready = v.started + queues_->reclaim_grace();
      if (v.phase == JobPhase::kRunning && ready > snap.now) next = std::min(next, ready);
    }
  }
  return next;
}

}  // namespace tessera
