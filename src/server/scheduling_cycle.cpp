#include "server/scheduling_cycle.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "server/decision_metrics.h"
#include "server/job_limits.h"
#include "server/resize_applier.h"

namespace tessera {

SchedulingCycle::SchedulingCycle(ControllerCore& core, std::uint64_t port_salt)
    : core_(core), port_salt_(port_salt), scheduler_(core.options()), recovery_(core, port_salt) {}

std::string CycleRecordMessage(Tick clock, std::uint64_t seed, const AppliedDecisions& a) {
  return "clock=" + std::to_string(clock) + " seed=" + std::to_string(seed) +
         " bound=" + std::to_string(a.bound) + " preempted=" + std::to_string(a.preempted) +
         " resized=" + std::to_string(a.resized) +
         " unschedulable=" + std::to_string(a.unschedulable) +
         " deferred=" + std::to_string(a.deferred) + " dropped=" + std::to_string(a.dropped);
}

std::optional<CycleSnapshot> SchedulingCycle::SnapshotLocked(const Scheduler** scheduler) {
  ControllerState& state = core_.state;
  const std::uint64_t seed = ++state.cycles;
  if (!cluster_.cluster || cluster_.generation != state.node_generation)
    cluster_ = BuildCycleCluster(state, core_.options().topology_levels);
  StartResizedUnitsLocked(core_, cluster_, port_salt_);
  RefreshSchedulingWorkloads(state, cluster_);
  ApplyDependenciesLocked(core_);
  recovery_.RecoverLocked(cluster_, seed, versions_);
  for (auto id : state.active) state.jobs.at(id).waiting = false;
  // The usage window feeds co-location's oversell credit only (docs/colocation.md).
  const Tick usage_window =
      core_.options().scheduler.colocation.enabled ? core_.options().usage_window_ms : 0;
  CycleSnapshot snapshot =
      BuildCycleSnapshot(state, cluster_, core_.Now(), seed, versions_, usage_window);
  recovery_.HoldSpares(snapshot);
  for (const auto& problem : snapshot.problems) spdlog::warn("scheduling cycle: {}", problem);
  if (snapshot.snap.jobs.empty()) return std::nullopt;
  auto built = scheduler_.For(ClusterCapacity(*cluster_.cluster));
  state.queue_tree = scheduler_.queue_tree();
  state.scheduler_problem = scheduler_.problem();
  if (!built) return std::nullopt;
  *scheduler = *built;
  return snapshot;
}

int SchedulingCycle::ApplyLocked(const CycleSnapshot& snapshot, const Decisions& decisions) {
  ControllerState& state = core_.state;
  ChangeBuilder change(state);
  const Tick now = core_.Now();
  AppliedDecisions applied = ApplyDecisions(snapshot, decisions, change, now, port_salt_);
  for (const auto& why : applied.not_applied) spdlog::debug("scheduling cycle: {}", why);
  if (!decisions.empty()) {
    change.Event("SchedulingCycle", "cycle/" + std::to_string(snapshot.snap.seed),
                 CycleRecordMessage(snapshot.snap.now, snapshot.snap.seed, applied),
                 snapshot.snap.now);
  }
  // Why pending units stay pending, for the views (not durable).
  for (const auto& [job_id, reason] : applied.never_fits) {
    if (auto it = state.jobs.find(job_id); it != state.jobs.end()) {
      it->second.never_fits = reason;
      it->second.never_fits_generation = snapshot.cluster.generation;
    }
  }
  for (auto job_id : applied.waiting) {
    if (auto it = state.jobs.find(job_id); it != state.jobs.end()) it->second.waiting = true;
  }
  state.last_free_gpu_milli = snapshot.working->free_gpu_milli();
  if (auto s = core_.CommitLocked(change); !s) {
    spdlog::error("scheduling cycle {} not committed: {}", snapshot.snap.seed, s.error().message);
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
  if (std::any_of(jobs.begin(), jobs.end(),
                  [](const JobView& v) { return v.phase == JobPhase::kPending; })) {
    core_.metrics.PendingCycle(seconds);
  }
  return bound;
}

}  // namespace tessera
