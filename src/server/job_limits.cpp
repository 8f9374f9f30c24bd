#include "server/job_limits.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <set>

#include "server/job_gates.h"
#include "server/job_views.h"
#include "server/unit_lifecycle.h"

namespace tessera {

namespace {

bool EverStarted(const JobState& job) {
  return std::any_of(job.units.begin(), job.units.end(),
                     [](const UnitRecord& u) { return u.first_started_ms > 0; });
}

// Fails the pending units of a job whose dependencies can never be met.
void FailNeverSatisfied(ChangeBuilder& change, const JobState& job, const std::string& why,
                        Tick now) {
  change.Event("JobDependencyNeverSatisfied", JobObject(job.rec), why);
  for (int u = 0; u < static_cast<int>(job.units.size()); ++u) {
    if (job.units[static_cast<std::size_t>(u)].phase != UnitPhase::kPending) continue;
    auto& m = change.MutableUnit(job, u);
    m.phase = UnitPhase::kFailed;
    m.finished_ms = now;
    m.message = why;
  }
  FinishJobIfDone(change, job, now);
}

}  // namespace

void ApplyDependenciesLocked(ControllerCore& core) {
  ControllerState& state = core.state;
  auto phase_of = [&](const JobDependency& d) -> std::optional<std::string> {
    auto id = state.FindJob(d.queue, d.name);
    if (!id) return std::nullopt;
    return std::string(api::JobPhaseName(JobPhaseOf(state.jobs.at(*id))));
  };
  ChangeBuilder change(state);
  bool failed = false;
  // Only jobs with dependencies are ever blocked by them (ControllerState::with_dependencies).
  for (auto id : state.with_dependencies) {
    JobState& job = state.jobs.at(id);
    job.blocked_by.clear();
    // Dependencies gate the first start only: a restart does not wait for them again.
    if (job.spec.dependencies.empty() || job.rec.finished_ms != 0 || EverStarted(job)) continue;
    const auto gate = CheckDependencies(job.spec.dependencies, phase_of);
    if (gate.state == DependencyGate::State::kMet) continue;
    job.blocked_by = gate.message;  // also while a failure below is not committed yet
    if (gate.state == DependencyGate::State::kNeverSatisfied) {
      FailNeverSatisfied(change, job, gate.message, core.Now());
      failed = true;
    }
  }
  if (!failed) return;
  if (auto s = core.CommitLocked(change); !s) {  // retried on the next cycle
    spdlog::warn("failing jobs with unmet dependencies not committed: {}", s.error().message);
  }
}

void EnforceTimeLimits(ControllerCore& core) {
  std::lock_guard lock(core.mu);
  ControllerState& state = core.state;
  const Tick now = core.Now();
  ChangeBuilder change(state);
  bool stopped = false;
  for (auto id : state.time_limited) {  // not every active job: this runs under the lock
    const JobState& job = state.jobs.at(id);
    for (int u = 0; u < static_cast<int>(job.units.size()); ++u) {
      const UnitRecord& unit = job.units[static_cast<std::size_t>(u)];
      if (unit.phase != UnitPhase::kRunning) continue;
      auto why = TimeLimitExceeded(job.spec.time_limit_seconds, unit.started_ms, now);
      if (!why) continue;
      change.Event("JobTimeLimit", JobObject(job.rec), *why);
      StopUnit(change, job, u, UnitPhase::kFailed, *why, now);
      stopped = true;
    }
  }
  if (!stopped) return;
  if (auto s = core.CommitLocked(change); !s) {  // retried on the next tick
    spdlog::warn("stopping runs at their time limit not committed: {}", s.error().message);
  }
}

std::string GangNodes(const ControllerState& state, const JobState& job, const TaskRecord& task) {
  if (job.spec.IndependentTasks()) return task.node;
  std::map<int, std::string> by_rank;
  for (auto tid : job.tasks) {
    const TaskRecord& t = state.tasks.at(tid);
    if (t.unit == task.unit && t.attempt == task.attempt) by_rank[t.rank] = t.node;
  }
  std::string nodes;
  std::set<std::string> seen;
  for (const auto& [rank, node] : by_rank) {
    if (seen.insert(node).second) nodes += (nodes.empty() ? "" : ",") + node;
  }
  return nodes;
}

}  // namespace tessera
