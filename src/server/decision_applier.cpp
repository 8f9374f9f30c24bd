#include "server/decision_applier.h"

#include <array>
#include <map>
#include <set>

#include "server/resize_applier.h"
#include "server/unit_lifecycle.h"

namespace tessera {

namespace {

constexpr int kFirstMasterPort = 20000, kMasterPorts = 12000;

// What the live tasks of one node hold now, as the applier sees it: the state's live tasks
// plus the binds applied so far in this cycle.
struct NodeUsage {
  std::array<std::int32_t, kMaxGpusPerNode> gpu_milli{};
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;
};

class Applier {
 public:
  // `snapshot` may be null when only Bind is used (a placement decided in an earlier cycle).
  Applier(const CycleCluster& cluster, const CycleSnapshot* snapshot, ChangeBuilder& change,
          Tick now, std::uint64_t salt)
      : cluster_(cluster),
        snapshot_(snapshot),
        change_(change),
        state_(change.state()),
        now_(now),
        salt_(salt),
        next_task_id_(change.state().next_task_id) {}

  AppliedDecisions Run(const Decisions& decisions);
  // Why a bind cannot go where it was placed now, or empty when it can. An oversold bind
  // (co-location) takes CPU and memory only: its GPU share is lent from online replicas.
  std::string PlacementConflict(const Placement& placement, bool oversold = false);
  // The job a preemption was decided for (0: none known), and "; preempted by
  // job/QUEUE/NAME" for it ("" when there is none).
  std::int64_t PreemptorOf(JobId preemptor) const;
  std::string PreemptorNote(std::int64_t preemptor_job) const;
  void Bind(const JobState& job, int unit, const Placement& placement, bool oversold = false);

 private:
  // The job and unit of a decision if neither changed since the snapshot; else why not.
  const JobState* Unchanged(const SnapshotUnit& u, std::string* why) const;
  NodeUsage& UsageOf(const std::string& node);
  int PortFor(std::int64_t job_id, int attempt, const std::string& master);
  void Skip(bool defer, const JobState* job, const std::string& why);

  const CycleCluster& cluster_;
  const CycleSnapshot* snapshot_;
  ChangeBuilder& change_;
  const ControllerState& state_;
  Tick now_;
  std::uint64_t salt_;
  AppliedDecisions out_;
  std::map<std::string, NodeUsage> usage_;                 // nodes looked at so far
  std::set<std::pair<std::string, int>> bound_endpoints_;  // of the gangs bound this cycle
  std::map<NodeId, std::uint16_t> preempted_gpus_;
  std::int64_t next_task_id_;
};

const JobState* Applier::Unchanged(const SnapshotUnit& u, std::string* why) const {
  auto it = state_.jobs.find(u.job_id);
  if (it == state_.jobs.end()) {
    *why = "job " + std::to_string(u.job_id) + " was purged";
    return nullptr;
  }
  const JobState& job = it->second;
  const std::string object = JobObject(job.rec);
  if (job.rec.cancel_requested || job.rec.finished_ms != 0) {
    *why = object + " was cancelled or has finished";
    return nullptr;
  }
  if (job.rec.held) {
    *why = object + " is held";
    return nullptr;
  }
  const UnitRecord& now = change_.Unit(job, u.unit);
  if (now.phase != u.phase || now.attempt != u.attempt) {
    *why = object + " unit " + std::to_string(u.unit) + " is " +
           std::string(UnitPhaseName(now.phase)) + " (attempt " + std::to_string(now.attempt) +
           "), not " + std::string(UnitPhaseName(u.phase)) + " (attempt " +
           std::to_string(u.attempt) + ") as in the snapshot";
    return nullptr;
  }
  return &job;
}

NodeUsage& Applier::UsageOf(const std::string& node) {
  auto [it, added] = usage_.try_emplace(node);
  if (!added) return it->second;
  NodeUsage& use = it->second;
  if (auto live = state_.live_by_node.find(node); live != state_.live_by_node.end()) {
    for (auto id : live->second) {
      const TaskRecord& t = change_.Task(id);
      if (!IsLive(t.state)) continue;
      for (int g : t.gpus) use.gpu_milli[static_cast<std::size_t>(g)] += ClaimedGpuMilli(t);
      use.cpu_milli += t.cpu_milli;
      use.memory_mib += t.memory_mib;
    }
  }
  return use;
}

std::string Applier::PlacementConflict(const Placement& placement, bool oversold) {
  for (const TaskPlacement& tp : placement) {
    if (auto it = preempted_gpus_.find(tp.node);
        it != preempted_gpus_.end() && (it->second & tp.gpu_mask) != 0) {
      return "its GPUs are freed by a preemption of this cycle once the victim has exited";
    }
  }
  // Checked as a whole before any of it is taken: a gang binds all-or-nothing.
  std::map<std::string, NodeUsage> after;
  for (const TaskPlacement& tp : placement) {
    const std::string& name = cluster_.node_names.at(tp.node.value);
    auto nit = state_.nodes.find(name);
    if (nit == state_.nodes.end()) return "node " + name + " is gone";
    const RegisteredNode& node = nit->second;
    if (!node.schedulable()) {
      return "node " + name + " is " + std::string(NodeStatusName(node.rec.status)) +
             (node.has_strays ? " and runs strays" : "");
    }
    auto [it, added] = after.try_emplace(name);
    if (added) it->second = UsageOf(name);
    NodeUsage& use = it->second;
    const std::int32_t milli = oversold ? 0 : tp.gpu_milli > 0 ? tp.gpu_milli : kMilliPerGpu;
    for (int g = 0; g < kMaxGpusPerNode; ++g) {
      if (!(tp.gpu_mask >> g & 1)) continue;
      if (g >= node.rec.gpu_count) return "node " + name + " has no GPU " + std::to_string(g);
      auto& used = use.gpu_milli[static_cast<std::size_t>(g)];
      if (used + milli > kMilliPerGpu) {
        return "GPU " + std::to_string(g) + " of node " + name + " was taken meanwhile";
      }
      used += milli;
    }
    use.cpu_milli += tp.cpu_milli;
    use.memory_mib += tp.memory_mib;
    if (use.cpu_milli > node.rec.cpu_milli || use.memory_mib > node.rec.memory_mib) {
      return "CPU or memory of node " + name + " was taken meanwhile";
    }
  }
  for (auto& [name, use] : after) usage_[name] = use;
  return "";
}

int Applier::PortFor(std::int64_t job_id, int attempt, const std::string& master) {
  // A new gang whose rank 0 shares a node with a live gang, or with one bound earlier in this
  // cycle, gets another port than theirs.
  const auto in_use = [&](int port) {
    const std::pair<std::string, int> endpoint{master, port};
    return state_.live_endpoints.contains(endpoint) || bound_endpoints_.contains(endpoint);
  };
  int port = MasterPortFor(job_id, attempt, salt_);
  for (int tries = 0; in_use(port) && tries < kMasterPorts; ++tries)
    port = kFirstMasterPort + (port - kFirstMasterPort + 1) % kMasterPorts;
  bound_endpoints_.insert({master, port});
  return port;
}

void Applier::Bind(const JobState& job, int unit_index, const Placement& placement, bool oversold) {
  auto& unit = change_.MutableUnit(job, unit_index);
  unit.phase = UnitPhase::kRunning;
  ++unit.attempt;
  unit.started_ms = now_;
  if (unit.first_started_ms == 0) unit.first_started_ms = now_;
  unit.message = "";
  const auto& names = cluster_.node_names;
  const std::string master = state_.nodes.at(names.at(placement[0].node.value)).rec.address;
  const int port = PortFor(job.rec.id, unit.attempt, master);
  std::string where;
  for (std::size_t i = 0; i < placement.size(); ++i) {
    const TaskPlacement& tp = placement[i];
    TaskRecord t;
    t.id = next_task_id_++;
    t.job_id = job.rec.id;
    t.unit = unit_index;
    t.attempt = unit.attempt;
    t.rank = job.spec.IndependentTasks() ? unit_index : static_cast<int>(i);
    t.node = names.at(tp.node.value);
    for (int g = 0; g < kMaxGpusPerNode; ++g) {
      if (tp.gpu_mask >> g & 1) t.gpus.push_back(g);
    }
    t.gpu_milli = tp.gpu_milli > 0 ? tp.gpu_milli : static_cast<std::int32_t>(kMilliPerGpu);
    t.cpu_milli = tp.cpu_milli;
    t.memory_mib = tp.memory_mib;
    t.state = TaskState::kAssigned;
    t.created_ms = now_;
    t.master_addr = master;
    t.master_port = port;
    t.oversold = oversold;
    if (!where.empty()) where += ", ";
    where += t.node + " [" + GpuList(t.gpus) + "]";
    change_.AddTask(std::move(t));
  }
  change_.Event(
      "JobScheduled", JobObject(job.rec),
      (job.spec.IndependentTasks() ? "task " + std::to_string(unit_index) + " " : std::string()) +
          "attempt " + std::to_string(unit.attempt) + " bound to " + where +
          (oversold ? " (oversold: on online replicas' unused GPU share)" : ""));
  out_.binds.push_back({job.rec.id, unit_index, unit.attempt, placement});
  ++out_.bound;
}

void Applier::Skip(bool defer, const JobState* job, const std::string& why) {
  ++(defer ? out_.deferred : out_.dropped);
  out_.not_applied.push_back((defer ? "deferred: " : "dropped: ") +
                             (job != nullptr ? JobObject(job->rec) + ": " : std::string()) + why);
  change_.RequestSchedule();  // the next cycle decides again on what is there then
}

std::int64_t Applier::PreemptorOf(JobId preemptor) const {
  const SnapshotUnit* u = preemptor.valid() ? snapshot_->UnitOf(preemptor) : nullptr;
  return u == nullptr ? 0 : u->job_id;
}

std::string Applier::PreemptorNote(std::int64_t preemptor_job) const {
  auto it = state_.jobs.find(preemptor_job);
  return it == state_.jobs.end() ? "" : "; preempted by " + JobObject(it->second.rec);
}

AppliedDecisions Applier::Run(const Decisions& decisions) {
  // A preempted or resized gang keeps its GPUs until its processes are gone (SIGTERM, the
  // grace period): a bind onto any of them waits for a later cycle, where the preemptor is
  // placed on what has been freed by then.
  const CycleSnapshot& snapshot = *snapshot_;
  for (const auto& d : decisions) {
    if (d.kind != Decision::Kind::kPreempt && d.kind != Decision::Kind::kResize) continue;
    if (const JobView* v = snapshot.ViewOf(d.job)) {
      for (const TaskPlacement& tp : v->placement) preempted_gpus_[tp.node] |= tp.gpu_mask;
    }
  }
  std::vector<bool> decided(snapshot.units.size(), false);
  for (const auto& d : decisions) {
    const SnapshotUnit* found = snapshot.UnitOf(d.job);
    if (found == nullptr) {
      Skip(false, nullptr,
           "no unit in the snapshot has scheduling id " + std::to_string(d.job.value));
      continue;
    }
    const SnapshotUnit& u = *found;
    // A unit of snap.jobs, or of the pending queue (no index).
    const auto index = snapshot.IndexOf(d.job);
    auto decide = [&] {
      if (index) {
        decided[*index] = true;
      } else {
        out_.decided_queued.push_back(u.job_id);
      }
    };
    std::string why;
    const JobState* job = Unchanged(u, &why);
    if (d.kind == Decision::Kind::kUnschedulable) {
      decide();
      if (job != nullptr) {
        out_.never_fits.emplace_back(u.job_id, d.reason);
        ++out_.unschedulable;
      }
      continue;
    }
    if (job == nullptr) {
      Skip(false, nullptr, why);
      continue;
    }
    if (d.kind == Decision::Kind::kResize) {
      decide();
      if (auto target = BeginResize(change_, *job, u.unit, snapshot.ViewOf(d.job)->placement,
                                    d.placement, cluster_, now_)) {
        out_.resizes.emplace_back(u.job_id, std::move(*target));
        ++out_.resized;
      }
      continue;
    }
    if (d.kind == Decision::Kind::kPreempt) {
      decide();
      const std::int64_t by = PreemptorOf(d.preemptor);
      const std::string reason = d.reason + PreemptorNote(by);
      change_.Event("JobPreempted", JobObject(job->rec), reason);
      StopUnit(change_, *job, u.unit, UnitPhase::kPending, "preempted: " + reason, now_);
      out_.preemptions.push_back({u.job_id, u.unit, by});
      ++out_.preempted;
      continue;
    }
    if (std::string conflict = PlacementConflict(d.placement, d.oversold); !conflict.empty()) {
      Skip(true, job, conflict);
      continue;
    }
    decide();
    Bind(*job, u.unit, d.placement, d.oversold);
  }
  // Pending units that stay pending say why (rendered by the views).
  for (std::size_t i = 0; i < snapshot.units.size(); ++i) {
    if (snapshot.units[i].phase == UnitPhase::kPending && !decided[i])
      out_.waiting.push_back(snapshot.units[i].job_id);
  }
  return std::move(out_);
}

}  // namespace

AppliedDecisions ApplyDecisions(const CycleSnapshot& snapshot, const Decisions& decisions,
                                ChangeBuilder& change, Tick now, std::uint64_t port_salt) {
  return Applier(snapshot.cluster, &snapshot, change, now, port_salt).Run(decisions);
}

std::string BindDecidedPlacement(const CycleCluster& cluster, const JobState& job, int unit,
                                 const Placement& placement, ChangeBuilder& change, Tick now,
                                 std::uint64_t port_salt) {
  Applier applier(cluster, nullptr, change, now, port_salt);
  if (std::string conflict = applier.PlacementConflict(placement); !conflict.empty())
    return conflict;
  applier.Bind(job, unit, placement);
  return "";
}

int MasterPortFor(std::int64_t job_id, int attempt, std::uint64_t salt) {
  const auto h = static_cast<std::uint64_t>(job_id) * 7919u +
                 static_cast<std::uint64_t>(attempt) * 104729u + salt;
  return kFirstMasterPort + static_cast<int>(h % kMasterPorts);
}

}  // namespace tessera
