#include "server/resize_applier.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "server/decision_applier.h"
#include "server/unit_lifecycle.h"

namespace tessera {

namespace {

std::string Workers(std::size_t n) { return std::to_string(n) + (n == 1 ? " worker" : " workers"); }

// The target's placement over `cluster` (its node ids looked up by name); nullopt when one of
// its nodes is gone.
std::optional<Placement> TargetOver(const ResizeTarget& target, const CycleCluster& cluster) {
  Placement p = target.placement;
  for (std::size_t i = 0; i < p.size(); ++i) {
    auto it = cluster.ids.find(target.nodes[i]);
    if (it == cluster.ids.end()) return std::nullopt;
    p[i].node = it->second;
  }
  return p;
}

// Whether some rank of the unit's current attempt has ended already: a gang that is finishing
// (its ranks exit one by one) looks smaller than it is and must not be "grown".
bool Finishing(const ChangeBuilder& change, const JobState& job, int unit) {
  const int attempt = change.Unit(job, unit).attempt;
  return std::any_of(job.tasks.begin(), job.tasks.end(), [&](std::int64_t tid) {
    const TaskRecord& t = change.Task(tid);
    return t.unit == unit && t.attempt == attempt && !IsLive(t.state);
  });
}

enum class ResizeStep { kWaiting, kBind, kDrop };

// Where a resize stands: its old ranks still stopping, ready to bind, or overtaken (cancelled,
// held, failed, or the unit moved on otherwise).
ResizeStep StepOf(const JobState& job) {
  const ResizeTarget& target = *job.resize;
  const UnitRecord& unit = job.units.at(static_cast<std::size_t>(target.unit));
  if (unit.attempt != target.from_attempt || job.rec.finished_ms != 0 || job.rec.cancel_requested) {
    return ResizeStep::kDrop;
  }
  if (unit.phase == UnitPhase::kStopping && unit.stop_target == UnitPhase::kPending)
    return ResizeStep::kWaiting;
  if (unit.phase == UnitPhase::kPending && !job.rec.held) return ResizeStep::kBind;
  return ResizeStep::kDrop;
}

// Binds one resized unit (or gives its target up) in a commit of its own; true when done with
// it.
bool StartResized(ControllerCore& core, const JobState& job, const CycleCluster& cluster,
                  std::uint64_t salt) {
  const ResizeTarget& target = *job.resize;
  ChangeBuilder change(core.state);
  const std::string object = JobObject(job.rec);
  auto placement = TargetOver(target, cluster);
  std::string why = placement ? BindDecidedPlacement(cluster, job, target.unit, *placement, change,
                                                     core.Now(), salt)
                              : "one of its nodes is gone";
  const std::string sizes = Workers(static_cast<std::size_t>(target.from_workers)) + " to " +
                            std::to_string(target.placement.size());
  change.MutableUnit(job, target.unit).resize.clear();
  if (why.empty()) {
    change.Event("JobResized", object,
                 "resized from " + sizes + ": attempt " +
                     std::to_string(change.Unit(job, target.unit).attempt) +
                     ", every rank restarts from the last checkpoint");
  } else {
    change.Event("JobResizeAbandoned", object,
                 "not resized from " + sizes + " (" + why + "); the scheduler places it afresh");
    change.RequestSchedule();
  }
  if (auto s = core.CommitLocked(change); !s) {
    spdlog::warn("resize of {} not committed: {}", object, s.error().message);
    return false;
  }
  return true;
}

// Clears the durable copy of a resize that no longer applies (cancelled, held, failed, moved on).
void ForgetResize(ControllerCore& core, const JobState& job) {
  const int unit = job.resize->unit;
  if (static_cast<std::size_t>(unit) >= job.units.size() ||
      job.units[static_cast<std::size_t>(unit)].resize.empty())
    return;
  ChangeBuilder change(core.state);
  change.MutableUnit(job, unit).resize.clear();
  if (auto s = core.CommitLocked(change); !s) {
    // Harmless: after a restart the record is read back and dropped again by the same rule.
    spdlog::warn("dropped resize of {} not committed: {}", JobObject(job.rec), s.error().message);
  }
}

}  // namespace

std::optional<ResizeTarget> BeginResize(ChangeBuilder& change, const JobState& job, int unit,
                                        const Placement& from, const Placement& to,
                                        const CycleCluster& cluster, Tick now) {
  if (to == from || to.empty() || Finishing(change, job, unit)) return std::nullopt;
  ResizeTarget target;
  target.unit = unit;
  target.from_attempt = change.Unit(job, unit).attempt;
  target.from_workers = static_cast<int>(from.size());
  target.placement = to;
  for (const TaskPlacement& tp : to) target.nodes.push_back(cluster.node_names.at(tp.node.value));
  const bool grow = to.size() > from.size();
  change.Event("JobResizing", JobObject(job.rec),
               std::string(grow ? "growing" : "shrinking") + " from " + Workers(from.size()) +
                   " to " + std::to_string(to.size()) + " (elastic " +
                   std::to_string(job.spec.min_workers) + ".." +
                   std::to_string(job.spec.max_workers) + "): SIGTERM to every rank, " +
                   std::to_string(job.spec.grace_period_seconds) +
                   " s grace to checkpoint, then all ranks restart at the new size");
  StopUnit(change, job, unit, UnitPhase::kPending, "resizing to " + Workers(to.size()), now);
  change.MutableUnit(job, unit).resize = ResizeTargetJson(target);  // durable with the stop
  return target;
}

void KeepResizeTargets(ControllerState& state,
                       std::vector<std::pair<std::int64_t, ResizeTarget>> resizes) {
  for (auto& [job_id, target] : resizes) {
    auto it = state.jobs.find(job_id);
    if (it == state.jobs.end()) continue;
    it->second.resize = std::move(target);
    state.resizing.insert(job_id);
  }
}

bool IsResizing(const JobState& job, int unit) { return job.resize && job.resize->unit == unit; }

void TakeResizeTargets(const ControllerState& state, const CycleCluster& cluster,
                       ClusterState& working) {
  for (auto id : state.resizing) {
    auto it = state.jobs.find(id);
    if (it == state.jobs.end() || !it->second.resize) continue;
    auto placement = TargetOver(*it->second.resize, cluster);
    if (!placement) continue;
    // A rank that keeps its place is held by its old process already; Apply refuses it.
    for (const TaskPlacement& tp : *placement) (void)working.Apply({tp});
  }
}

Placement DroppedRanks(const ResizeTarget& target, const Placement& old,
                       const CycleCluster& cluster) {
  const Placement kept = TargetOver(target, cluster).value_or(Placement{});
  Placement dropped;
  for (const TaskPlacement& tp : old) {
    const bool keeps = std::any_of(kept.begin(), kept.end(), [&](const TaskPlacement& k) {
      return k.node == tp.node && k.gpu_mask == tp.gpu_mask;
    });
    if (!keeps) dropped.push_back(tp);
  }
  return dropped;
}

void StartResizedUnitsLocked(ControllerCore& core, const CycleCluster& cluster,
                             std::uint64_t port_salt) {
  ControllerState& state = core.state;
  std::vector<std::int64_t> done;
  for (auto id : state.resizing) {
    auto it = state.jobs.find(id);
    if (it == state.jobs.end() || !it->second.resize) {
      done.push_back(id);
      continue;
    }
    const ResizeStep step = StepOf(it->second);
    if (step == ResizeStep::kDrop) {
      ForgetResize(core, it->second);
      done.push_back(id);
    } else if (step == ResizeStep::kBind && StartResized(core, it->second, cluster, port_salt)) {
      done.push_back(id);
    }
  }
  for (auto id : done) {
    state.resizing.erase(id);
    if (auto it = state.jobs.find(id); it != state.jobs.end()) it->second.resize.reset();
  }
}

int AttemptWorkers(const ControllerState& state, const JobState& job, const TaskRecord& task) {
  int workers = 0;
  for (auto tid : job.tasks) {
    const TaskRecord& t = state.tasks.at(tid);
    workers += t.unit == task.unit && t.attempt == task.attempt;
  }
  return workers;
}

}  // namespace tessera
