#include "server/scheduling_cycle.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/rng.h"
#include "server/cycle_record.h"
#include "server/decision_metrics.h"
#include "server/job_limits.h"
#include "server/resize_applier.h"

namespace tessera {

SchedulingCycle::SchedulingCycle(ControllerCore& core, std::uint64_t port_salt)
    : core_(core), port_salt_(port_salt), scheduler_(core.options()), recovery_(core, port_salt) {
  const SchedulerConfig& config = core.options().scheduler;
  use_queue_ = !IsFairSharePolicy(config.queue_policy) && !config.colocation.enabled;
}

void SchedulingCycle::TakeChangesLocked(const Scheduler& scheduler, bool all) {
  ControllerState& state = core_.state;
  std::vector<std::int64_t> changed;
  changed.swap(state.changed_jobs);
  all = all || state.changed_overflow;  // notes were lost: afresh (reset once the tasks are)
  // The jobs left out of the queue are looked at again each cycle.
  changed.insert(changed.end(), queue_.uncached().begin(), queue_.uncached().end());
  RefreshSchedulingWorkloads(state, cluster_, all ? nullptr : &changed);
  auto touched = queue_.Update(state, std::move(changed), all, scheduler, core_.Now());
  queue_touched_.insert(queue_touched_.end(), touched.begin(), touched.end());
}

std::optional<CycleSnapshot> SchedulingCycle::SnapshotLocked(const Scheduler** scheduler) {
  ControllerState& state = core_.state;
  // The simulator's cycle seed (sim/replay_simulation.cpp): the run seed mixed with the
  // cycle's number, recorded with the cycle (cycle_record.h).
  const std::uint64_t seed = Rng::Mix(RunSeed(), ++state.cycles);
  const bool new_cluster = !cluster_.cluster || cluster_.generation != state.node_generation;
  ClusterChange change;
  if (new_cluster) {
    CycleCluster next = BuildCycleCluster(state, core_.options().topology_levels);
    change = CompareClusters(cluster_, next);
    cluster_ = std::move(next);
  }
  auto built = scheduler_.For(ClusterCapacity(*cluster_.cluster));
  state.queue_tree = scheduler_.queue_tree();
  state.scheduler_problem = scheduler_.problem();
  StartResizedUnitsLocked(core_, cluster_, port_salt_);
  const bool queued = use_queue_ && built;
  // Nodes added to the same models (registration) keep the queue: its views do not name nodes.
  const bool keeps_views = change.same_models && change.only_added;
  const bool rebuild_queue =
      (new_cluster && !keeps_views) || state.changed_overflow || !queue_built_;
  if (!queued) RefreshSchedulingWorkloads(state, cluster_, nullptr, &change);
  if (queued && new_cluster && !rebuild_queue) {
    for (auto id : RefreshSchedulingWorkloads(state, cluster_, nullptr, &change))
      state.NoteChanged(id);
  }
  ApplyDependenciesLocked(core_);
  if (queued) TakeChangesLocked(**built, rebuild_queue);
  queue_built_ = queued;
  recovery_.RecoverLocked(cluster_, seed, versions_, queued ? &queue_.restarted_gangs() : nullptr);
  if (queued) {
    TakeChangesLocked(**built, false);  // what recovery committed
    // The live tasks of the jobs the queue took (both times) in the working state.
    live_tasks_.Update(state, cluster_, queue_touched_, rebuild_queue || state.changed_overflow,
                       versions_);
    state.changed_overflow = false;
  } else {
    state.changed_jobs.clear();
    state.changed_overflow = false;
    for (auto id : state.active) state.jobs.at(id).waiting = false;
  }
  for (auto id : waiting_before_) {
    if (auto it = state.jobs.find(id); it != state.jobs.end()) it->second.waiting = false;
  }
  waiting_before_.clear();
  // The usage window feeds co-location's oversell credit only (docs/colocation.md).
  const Tick usage_window =
      core_.options().scheduler.colocation.enabled ? core_.options().usage_window_ms : 0;
  CycleSnapshot snapshot =
      BuildCycleSnapshot(state, cluster_, core_.Now(), seed, versions_, usage_window,
                         queued ? &queue_ : nullptr, queued ? &live_tasks_ : nullptr,
                         !queued || ReadsEveryRunningJob(**built, core_.options().scheduler));
  recovery_.HoldSpares(snapshot);
  for (const auto& problem : snapshot.problems) spdlog::warn("scheduling cycle: {}", problem);
  if (snapshot.snap.jobs.empty() && (!queued || queue_.in_order().empty())) return std::nullopt;
  if (!built) return std::nullopt;
  *scheduler = *built;
  return snapshot;
}

void SchedulingCycle::MarkWaitingLocked(const AppliedDecisions& applied) {
  ControllerState& state = core_.state;
  for (auto id : applied.waiting) {
    if (auto it = state.jobs.find(id); it != state.jobs.end()) it->second.waiting = true;
  }
  waiting_before_ = applied.waiting;
  if (!use_queue_) return;
  // A job with queued units waits while one of them was not decided. Only the jobs whose
  // queued views or decisions changed since the last cycle can have changed.
  std::map<std::int64_t, std::size_t> decided;
  for (auto id : applied.decided_queued) ++decided[id];
  std::vector<std::int64_t> recheck;
  recheck.swap(queue_touched_);
  recheck.insert(recheck.end(), decided_before_.begin(), decided_before_.end());
  recheck.insert(recheck.end(), applied.decided_queued.begin(), applied.decided_queued.end());
  std::sort(recheck.begin(), recheck.end());
  recheck.erase(std::unique(recheck.begin(), recheck.end()), recheck.end());
  std::set<std::int64_t> from_jobs(applied.waiting.begin(), applied.waiting.end());
  for (auto id : recheck) {
    auto it = state.jobs.find(id);
    if (it == state.jobs.end()) continue;
    const auto d = decided.find(id);
    const std::size_t n = d == decided.end() ? 0 : d->second;
    it->second.waiting = from_jobs.contains(id) || queue_.QueuedUnitsOf(id) > n;
  }
  decided_before_.clear();
  for (const auto& [id, n] : decided) decided_before_.push_back(id);
}

int SchedulingCycle::ApplyLocked(const CycleSnapshot& snapshot, const Decisions& decisions) {
  ControllerState& state = core_.state;
  ChangeBuilder change(state);
  const Tick now = core_.Now();
  AppliedDecisions applied = ApplyDecisions(snapshot, decisions, change, now, port_salt_);
  for (const auto& why : applied.not_applied) spdlog::debug("scheduling cycle: {}", why);
  if (!decisions.empty()) {
    const CycleClock at{snapshot.snap.now, RunSeed(), state.cycles};
    change.Event("SchedulingCycle", "cycle/" + std::to_string(at.cycle),
                 CycleRecordMessage(at, applied, state, snapshot.cluster), snapshot.snap.now);
  }
  // Why pending units stay pending, for the views (not durable).
  for (const auto& [job_id, reason] : applied.never_fits) {
    if (auto it = state.jobs.find(job_id); it != state.jobs.end()) {
      it->second.never_fits = reason;
      it->second.never_fits_generation = snapshot.cluster.generation;
    }
  }
  for (const auto& [job_id, reason] : applied.never_fits) state.NoteChanged(job_id);
  MarkWaitingLocked(applied);
  state.last_free_gpu_milli = snapshot.working->free_gpu_milli();
  if (auto s = core_.CommitLocked(change); !s) {
    spdlog::error("scheduling cycle {} not committed: {}", state.cycles, s.error().message);
    return 0;
  }
  KeepResizeTargets(state, std::move(applied.resizes));
  if (applied.bound > 0 && state.first_decision_ms < 0)
    state.first_decision_ms = now - state.started_ms;
  RecordDecisionMetricsLocked(core_, snapshot, decisions, applied, now);
  return applied.bound;
}

int SchedulingCycle::Run() {
  using Clock = std::chrono::steady_clock;
  std::lock_guard cycle(cycle_mu_);
  const Scheduler* scheduler = nullptr;
  std::optional<CycleSnapshot> snapshot;
  auto start = Clock::now();
  {
    std::lock_guard lock(core_.mu);
    snapshot = SnapshotLocked(&scheduler);
    if (!snapshot) core_.PublishLocked();  // its count and problem, for /v1/status
  }
  last_locked_ = Clock::now() - start;
  if (!snapshot) return 0;
  const auto cycle_start = start;
  // Outside the lock: submissions, heartbeats and views go on while the scheduler decides.
  const Decisions decisions = scheduler->Schedule(snapshot->snap, *snapshot->working);
  start = Clock::now();
  std::lock_guard lock(core_.mu);
  const int bound = ApplyLocked(*snapshot, decisions);
  core_.PublishLocked();
  const auto end = Clock::now();
  last_locked_ += end - start;
  const double seconds = std::chrono::duration<double>(end - cycle_start).count();
  core_.metrics.Cycle(seconds, std::chrono::duration<double>(last_locked_).count());
  const auto& jobs = snapshot->snap.jobs;
  const auto* queued = snapshot->snap.pending_in_order;
  if ((queued != nullptr && !queued->empty()) ||
      std::any_of(jobs.begin(), jobs.end(),
                  [](const JobView& v) { return v.phase == JobPhase::kPending; })) {
    core_.metrics.PendingCycle(seconds);
  }
  return bound;
}

}  // namespace tessera
