#include "server/unit_lifecycle.h"

namespace tessera {

std::string GpuList(const std::vector<int>& gpus) {
  std::string s;
  for (int g : gpus) {
    if (!s.empty()) s += ',';
    s += std::to_string(g);
  }
  return s;
}

namespace {

// The tasks of a job known to `change`: those in the state, then those it adds.
template <typename Visit>
void ForEachTask(const ChangeBuilder& change, const JobState& job, Visit visit) {
  for (auto tid : job.tasks) visit(tid);
  for (auto tid : change.AddedTasks(job.rec.id)) visit(tid);
}

// A running unit one of whose tasks failed or was lost: restart or fail the gang. An oversold
// task lost with its node ran on credit lent by online replicas there; like an offline task
// evicted for them, it goes back to Pending without using up a restart.
void OnTaskFailed(ChangeBuilder& change, const JobState& job, int u, const TaskRecord& failed,
                  Tick now) {
  const bool lost = failed.state == TaskState::kLost;
  const std::string object = JobObject(job.rec);
  if (lost && failed.oversold) {
    const std::string why = "co-location: the oversold GPU share was lost with node " + failed.node;
    change.Event("JobPreempted", object, why);
    StopUnit(change, job, u, UnitPhase::kPending, "preempted: " + why, now);
    return;
  }
  std::string why = "task rank " + std::to_string(failed.rank) +
                    (lost ? " was lost with node " + failed.node
                          : " exited with code " + std::to_string(failed.exit_code));
  if (!lost && !failed.message.empty()) why += " (" + failed.message + ")";
  const bool restart = change.Unit(job, u).restarts < job.spec.max_restarts;
  {
    auto& m = change.MutableUnit(job, u);
    m.exit_code = failed.exit_code;
    if (restart) ++m.restarts;
  }
  if (restart) {
    change.Event("JobRestarting", object,
                 why + "; restart " + std::to_string(change.Unit(job, u).restarts) + " of " +
                     std::to_string(job.spec.max_restarts));
  } else {
    change.Event("JobFailing", object,
                 why + (job.spec.max_restarts > 0 ? "; no restarts left" : "; maxRestarts is 0"));
  }
  StopUnit(change, job, u, restart ? UnitPhase::kPending : UnitPhase::kFailed, why, now);
}

}  // namespace

void StopUnit(ChangeBuilder& change, const JobState& job, int u, UnitPhase target,
              const std::string& why, Tick now) {
  auto& unit = change.MutableUnit(job, u);
  if (unit.phase == UnitPhase::kStopping && unit.stop_target == UnitPhase::kCancelled) return;
  unit.phase = UnitPhase::kStopping;
  unit.stop_target = target;
  unit.message = why;
  const int attempt = unit.attempt;
  ForEachTask(change, job, [&](std::int64_t tid) {
    const TaskRecord& t = change.Task(tid);
    if (t.unit != u || t.attempt != attempt || !IsLive(t.state) || t.state == TaskState::kStopping)
      return;
    auto& m = change.MutableTask(tid);
    m.state = TaskState::kStopping;
    m.message = why;
  });
  EvaluateUnit(change, job, u, now);
}

void EvaluateUnit(ChangeBuilder& change, const JobState& job, int u, Tick now) {
  const UnitRecord& unit = change.Unit(job, u);
  int live = 0, total = 0, succeeded = 0;
  bool rank0_succeeded = false;
  std::int64_t failed = -1;
  ForEachTask(change, job, [&](std::int64_t tid) {
    const TaskRecord& t = change.Task(tid);
    if (t.unit != u || t.attempt != unit.attempt) return;
    ++total;
    if (IsLive(t.state)) ++live;
    if (t.state == TaskState::kSucceeded) ++succeeded;
    rank0_succeeded |= t.rank == 0 && t.state == TaskState::kSucceeded;
    if ((t.state == TaskState::kFailed || t.state == TaskState::kLost) && failed < 0) failed = tid;
  });
  const std::string object = JobObject(job.rec);
  if (unit.phase == UnitPhase::kRunning) {
    if (failed >= 0) {
      const TaskRecord failed_task = change.Task(failed);
      OnTaskFailed(change, job, u, failed_task, now);
      return;
    }
    if (job.spec.success_policy == SuccessPolicy::kRank0 && rank0_succeeded && succeeded < total) {
      change.Event("JobCompleting", object, "rank 0 exited with code 0 (successPolicy Rank0)");
      StopUnit(change, job, u, UnitPhase::kSucceeded,
               "rank 0 exited with code 0; stopping the other ranks", now);
      return;
    }
    if (total > 0 && succeeded == total) {
      auto& m = change.MutableUnit(job, u);
      m.phase = UnitPhase::kSucceeded;
      m.finished_ms = now;
      m.exit_code = 0;
      m.message = "";
      if (job.units.size() > 1) {
        change.Event("TaskSucceeded", object, "task " + std::to_string(u) + " succeeded");
      }
      FinishJobIfDone(change, job, now);
    }
    return;
  }
  if (unit.phase == UnitPhase::kStopping && live == 0) {
    auto& m = change.MutableUnit(job, u);
    m.phase = m.stop_target;
    if (m.phase == UnitPhase::kPending) {
      m.pending_since_ms = now;
      change.RequestSchedule();
      change.Event("JobRequeued", object, "requeued: " + m.message);
    } else {
      m.finished_ms = now;
    }
    FinishJobIfDone(change, job, now);
  }
}

void FinishJobIfDone(ChangeBuilder& change, const JobState& job, Tick now) {
  const JobRecord& rec = change.Job(job);
  if (rec.finished_ms != 0) return;
  bool any_failed = false, any_cancelled = false;
  std::string message;
  for (int u = 0; u < static_cast<int>(job.units.size()); ++u) {
    const UnitRecord& unit = change.Unit(job, u);
    if (!IsFinal(unit.phase)) return;
    if (unit.phase == UnitPhase::kFailed) {
      any_failed = true;
      if (message.empty()) message = unit.message;
    }
    if (unit.phase == UnitPhase::kCancelled) any_cancelled = true;
  }
  const bool cancelled = any_cancelled && rec.cancel_requested;
  auto& m = change.MutableJob(job);
  m.finished_ms = now;
  const std::string object = JobObject(job.rec);
  if (cancelled) {
    m.message = "cancelled";
    change.Event("JobCancelled", object, "cancelled; every task has stopped");
  } else if (any_failed) {
    m.message = message;
    change.Event("JobFailed", object, message);
  } else {
    m.message = "";
    change.Event("JobSucceeded", object, "every task exited with code 0");
  }
}

namespace {

// What an ended task's report makes of it; returns the words for its event.
std::string RecordTaskEnd(TaskRecord& m, const TaskReport& r, Tick now) {
  const bool was_stopping = m.state == TaskState::kStopping;
  m.exit_code = r.exit_code;
  m.signal = r.signal;
  if (r.pid != 0) m.pid = r.pid;
  if (m.started_ms == 0) m.started_ms = r.started_ms;
  m.finished_ms = r.finished_ms > 0 ? r.finished_ms : now;
  if (!r.message.empty()) m.message = r.message;
  if (r.state == ReportedState::kLost) {
    m.state = TaskState::kLost;
    return "lost: " + r.message;
  }
  if (r.state == ReportedState::kStopped && !was_stopping) {
    // Stopped by its agent (shutting down), not by us: the node is going away.
    m.state = TaskState::kLost;
    m.message = "stopped by its agent: " + r.message;
    return m.message;
  }
  if (was_stopping) {
    m.state = TaskState::kStopped;
    return "stopped (exit code " + std::to_string(r.exit_code) + ")";
  }
  if (r.state == ReportedState::kFailedToStart) {
    m.state = TaskState::kFailed;
    return "failed to start: " + r.message;
  }
  if (r.exit_code == 0 && r.state == ReportedState::kExited) {
    m.state = TaskState::kSucceeded;
    return "exited with code 0";
  }
  m.state = TaskState::kFailed;
  return r.signal != 0 ? "killed by signal " + std::to_string(r.signal) + " (exit code " +
                             std::to_string(r.exit_code) + ")"
                       : "exited with code " + std::to_string(r.exit_code);
}

}  // namespace

void RecordTaskReport(ChangeBuilder& change, const std::string& node, const TaskReport& r, Tick now,
                      std::set<std::int64_t>& awaiting_readoption) {
  if (!change.HasTask(r.task_id)) return;  // unknown: a stray
  const TaskRecord& t = change.Task(r.task_id);
  if (t.node != node || !IsLive(t.state)) return;  // stray or already recorded
  auto jit = change.state().jobs.find(t.job_id);
  if (jit == change.state().jobs.end()) return;
  const JobState& job = jit->second;
  const std::string object = JobObject(job.rec);
  const std::string who = "task " + std::to_string(t.id) + " (rank " + std::to_string(t.rank) +
                          ", attempt " + std::to_string(t.attempt) + ") on " + t.node;
  if (r.state == ReportedState::kRunning) {
    if (t.state == TaskState::kAssigned) {
      auto& m = change.MutableTask(r.task_id);
      m.state = TaskState::kRunning;
      m.pid = r.pid;
      m.started_ms = r.started_ms > 0 ? r.started_ms : now;
      change.Event("TaskStarted", object,
                   who + " started, pid " + std::to_string(r.pid) + ", GPUs [" + GpuList(m.gpus) +
                       "]" + (m.oversold ? " (oversold)" : "") +
                       (r.isolation.empty() ? "" : "; isolation: " + r.isolation));
    } else if (awaiting_readoption.erase(r.task_id) > 0) {
      change.Event("TaskReadopted", object,
                   who + " still running (pid " + std::to_string(r.pid) +
                       ") after a controller restart; re-adopted");
    }
    return;
  }
  auto& m = change.MutableTask(r.task_id);
  const std::string what = RecordTaskEnd(m, r, now);
  change.Event(std::string("Task") + std::string(TaskStateName(m.state)), object, who + " " + what);
  change.RequestSchedule();
  EvaluateUnit(change, job, m.unit, now);
}

}  // namespace tessera
