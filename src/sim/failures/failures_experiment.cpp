// The failures experiment's event simulation and its aggregation over seeds and checkpoint
// intervals (see failures_experiment.h and docs/failures.md).
#include "sim/failures/failures_experiment.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <limits>
#include <memory>
#include <tuple>
#include <variant>

#include "core/cluster_state.h"
#include "core/rng.h"
#include "sim/event_queue.h"
#include "sim/failures/failure_file.h"

namespace tessera {
namespace {

using Kind = RecoveryDecision::Kind;

enum class Phase { kRunning, kCheckpointing, kDown, kWaiting, kRestarting };

struct FailureHit {
  std::size_t index;
};
struct NodeBack {
  std::uint32_t node;
};
struct LeafBack {
  std::uint32_t leaf;
};
struct JobEvent {
  enum Kind { kDetect, kRestarted, kCheckpointStart, kCheckpointDone, kRetry };
  Kind kind;
  std::size_t job;
  std::uint64_t epoch;
};
using Event = std::variant<FailureHit, NodeBack, LeafBack, JobEvent>;

struct Job {
  Workload w;
  int full = 0;  // workers at full size
  double full_gpus = 0;
  Tick interval = 0;    // checkpoint interval (compute time)
  Placement placement;  // rank order
  Phase phase = Phase::kRunning;
  std::uint64_t epoch = 0;  // bumped whenever pending job events become stale
  double progress = 0;      // seconds of training at full size, including unsaved work
  double durable = 0;       // progress at the last completed checkpoint
  Tick seg_start = 0;       // running: start of this compute segment
  Tick stall_start = 0;     // checkpointing: start of the stall
  Tick episode_start = -1;  // the failure (or grow) that stopped the job
  Tick idle_from = 0;       // idle accounting flushed up to here
  double idle_rate = 1;     // size ÷ full while this interruption lasts
  bool growing = false;     // this pause is a planned grow, not a failure
  bool waited = false;      // this episode has waited for capacity
  bool retry_pending = false;
  std::vector<NodeId> episode_failed;  // nodes that failed during this episode
  // Figures.
  double redone = 0, idle = 0, stall = 0, shrunk = 0;  // GPU-seconds
  int interruptions = 0;

  double rate() const { return static_cast<double>(placement.size()) / full; }
};

// "replace+drain" → ("replace", true).
std::pair<std::string, bool> SplitPolicy(const std::string& spec) {
  const std::string suffix = "+drain";
  if (spec.size() > suffix.size() && spec.ends_with(suffix)) {
    return {spec.substr(0, spec.size() - suffix.size()), true};
  }
  return {spec, false};
}

class Simulation {
 public:
  Simulation(const Cluster& cluster, const RecoveryTopology& topology,
             const std::vector<FailureEvent>& events, const FailureModel& repairs,
             const FailuresOptions& options, const RecoveryPolicy& policy, bool drain)
      : cluster_(cluster),
        topo_(topology),
        events_(events),
        repairs_(repairs),
        options_(options),
        policy_(policy),
        drain_(drain),
        state_(cluster),
        owner_(static_cast<std::size_t>(cluster.node_count()), -1),
        node_down_(static_cast<std::size_t>(cluster.node_count()), 0),
        leaf_down_(static_cast<std::size_t>(topology.leaf_count()), 0),
        lemon_fixed_(static_cast<std::size_t>(cluster.node_count()), 0),
        is_spare_(static_cast<std::size_t>(cluster.node_count()), 0),
        spares_by_leaf_(static_cast<std::size_t>(topology.leaf_count())),
        failure_times_(static_cast<std::size_t>(cluster.node_count())) {}

  Result<FailuresRun> Run(const std::string& name, const std::vector<Tick>& intervals);

 private:
  bool Usable(NodeId n) const { return !node_down_[n.value] && !leaf_down_[topo_.leaf(n)]; }
  std::string NodeName(NodeId n) const { return cluster_.node(n).name; }
  double Gpus(const Job& j) const { return j.full_gpus * j.rate(); }

  Status PlaceJobs();
  void AddSpare(NodeId n);
  void RemoveSpare(NodeId n);
  void Refill();
  int SparesPerLeaf() const;
  int SpareTarget() const;
  bool CanBeSpare(NodeId n) const;

  void Handle(const FailureHit& f, Tick now);
  void Handle(const NodeBack& b, Tick now);
  void Handle(const LeafBack& b, Tick now);
  void Handle(const JobEvent& e, Tick now);

  void NodeDown(NodeId n, std::vector<std::size_t>* hit_jobs);
  void NodeUp(NodeId n, Tick now);
  void JobFault(std::size_t ji, Tick now, const FailureEvent& f, const std::string& target);
  void Decide(std::size_t ji, Tick now);
  void Apply(std::size_t ji, const RecoveryDecision& d, Tick now);
  void Restarted(std::size_t ji, Tick now);
  void CheckpointDone(std::size_t ji, Tick now);
  void RetryWaiting(Tick now);

  void Advance(Job& j, Tick now);     // running: progress and shrunk capacity up to now
  void FlushStall(Job& j, Tick now);  // checkpointing: stall up to now
  void FlushIdle(Job& j, Tick now);   // interrupted: idle up to now
  RecoveryRequest Request(const Job& j) const;
  RecoveryView View() const;

  void SampleProgress(Tick now);
  void Log(Tick now, const std::string& what);
  void Timeline(TimelineEntry e);

  const Cluster& cluster_;
  const RecoveryTopology& topo_;
  const std::vector<FailureEvent>& events_;
  const FailureModel& repairs_;
  const FailuresOptions& options_;
  const RecoveryPolicy& policy_;
  const bool drain_;

  ClusterState state_;
  std::vector<Job> jobs_;
  std::vector<int> owner_;  // job index per node, -1 = none
  std::vector<std::uint8_t> node_down_;
  std::vector<std::uint8_t> leaf_down_;
  std::vector<std::uint8_t> lemon_fixed_;  // drained and rebuilt: no longer a lemon
  std::vector<std::uint8_t> is_spare_;
  std::vector<std::vector<NodeId>> spares_by_leaf_;
  int spare_count_ = 0;
  std::vector<std::vector<Tick>> failure_times_;  // hardware failures per node (drain rule)
  EventQueue<Event> queue_;
  Tick last_time_ = 0;
  double spare_gpu_seconds_ = 0;
  std::optional<Error> error_;
  FailuresRun run_;
};

int Simulation::SparesPerLeaf() const {
  return policy_.uses_spares() ? std::max(0, options_.spares_per_leaf) : 0;
}

// The pool's size: `spares_per_leaf` for every leaf, at most `max_spares`.
int Simulation::SpareTarget() const {
  int target = SparesPerLeaf() * topo_.leaf_count();
  if (options_.max_spares >= 0) target = std::min(target, options_.max_spares);
  return target;
}

bool Simulation::CanBeSpare(NodeId n) const {
  return !is_spare_[n.value] && owner_[n.value] < 0 && Usable(n) && state_.node(n).tasks == 0;
}

void Simulation::AddSpare(NodeId n) {
  is_spare_[n.value] = 1;
  auto& pool = spares_by_leaf_[topo_.leaf(n)];
  pool.insert(std::lower_bound(pool.begin(), pool.end(), n), n);
  ++spare_count_;
}

void Simulation::RemoveSpare(NodeId n) {
  if (!is_spare_[n.value]) return;
  is_spare_[n.value] = 0;
  auto& pool = spares_by_leaf_[topo_.leaf(n)];
  pool.erase(std::find(pool.begin(), pool.end(), n));
  --spare_count_;
}

// Keeps the pool at its target: first leaves short of their `spares_per_leaf` take a free node
// of their own (the highest ids, as the gangs fill leaves from the start), then any free node
// makes up the total. A newly designated spare warms up in the background; we take it as ready
// at once, which flatters spares only when two failures come less than a cold start apart.
void Simulation::Refill() {
  const int target = SpareTarget();
  if (spare_count_ >= target) return;
  const int per_leaf = SparesPerLeaf();
  for (int pass = 0; pass < 2 && spare_count_ < target; ++pass) {
    for (int l = 0; l < topo_.leaf_count() && spare_count_ < target; ++l) {
      const auto& nodes = topo_.leaf_nodes[static_cast<std::size_t>(l)];
      for (auto it = nodes.rbegin(); it != nodes.rend() && spare_count_ < target; ++it) {
        if (pass == 0 &&
            static_cast<int>(spares_by_leaf_[static_cast<std::size_t>(l)].size()) >= per_leaf) {
          break;
        }
        if (CanBeSpare(*it)) AddSpare(*it);
      }
    }
  }
}

Status Simulation::PlaceJobs() {
  // The spares policy holds back up to `spares_per_leaf` nodes at the end of each leaf (the
  // gang fills leaves from their start), up to `max_spares`. When the gangs do not fit beside
  // them, spares are given back from the last leaves until they do.
  const int per_leaf = SparesPerLeaf();
  const int target = SpareTarget();
  std::vector<NodeId> reserved;
  for (int l = 0; l < topo_.leaf_count() && spare_count_ < target; ++l) {
    const auto& nodes = topo_.leaf_nodes[static_cast<std::size_t>(l)];
    int taken = 0;
    for (auto it = nodes.rbegin(); it != nodes.rend() && taken < per_leaf; ++it) {
      if (spare_count_ >= target) break;
      AddSpare(*it);
      reserved.push_back(*it);
      ++taken;
    }
  }
  const RecoveryView view = View();
  std::vector<Placement> placements;
  while (true) {
    ClusterState scratch = state_;
    placements.clear();
    bool ok = true;
    for (auto& j : jobs_) {
      auto p = PlaceGangOnLeaves(j.w, j.full, scratch, view);
      if (!p || !scratch.Apply(*p)) {
        ok = false;
        break;
      }
      placements.push_back(std::move(*p));
    }
    if (ok) break;
    if (reserved.empty()) {
      std::int64_t gpus = 0;
      for (const auto& j : jobs_) gpus += static_cast<std::int64_t>(j.full_gpus);
      return FailedPrecondition("the cluster (" + std::to_string(cluster_.node_count()) +
                                " nodes, " + std::to_string(cluster_.total_gpus()) +
                                " GPUs) cannot hold the job" + (jobs_.size() > 1 ? "s" : "") +
                                " (" + std::to_string(gpus) + " GPUs in whole nodes)");
    }
    RemoveSpare(reserved.back());
    reserved.pop_back();
  }
  for (std::size_t ji = 0; ji < jobs_.size(); ++ji) {
    if (!state_.Apply(placements[ji])) return Internal("placing " + jobs_[ji].w.name);
    for (const auto& t : placements[ji]) owner_[t.node.value] = static_cast<int>(ji);
    jobs_[ji].placement = std::move(placements[ji]);
  }
  Refill();
  run_.spares_initial = spare_count_;
  return {};
}

RecoveryRequest Simulation::Request(const Job& j) const {
  RecoveryRequest req;
  req.job = &j.w;
  req.placement = j.placement;
  req.full_workers = j.full;
  for (std::size_t r = 0; r < j.placement.size(); ++r) {
    if (!Usable(j.placement[r].node)) req.failed_ranks.push_back(static_cast<int>(r));
  }
  return req;
}

RecoveryView Simulation::View() const {
  RecoveryView v;
  v.state = &state_;
  v.topology = &topo_;
  if (policy_.uses_spares()) {
    v.spares_by_leaf = &spares_by_leaf_;
    v.is_spare = &is_spare_;
  }
  return v;
}

void Simulation::Advance(Job& j, Tick now) {
  const double dt = ToSeconds(now - j.seg_start);
  j.progress += j.rate() * dt;
  j.shrunk += (1 - j.rate()) * j.full_gpus * dt;
  j.seg_start = now;
}

void Simulation::FlushStall(Job& j, Tick now) {
  const double dt = ToSeconds(now - j.stall_start);
  j.stall += Gpus(j) * dt;
  j.shrunk += (1 - j.rate()) * j.full_gpus * dt;
  j.stall_start = now;
}

void Simulation::FlushIdle(Job& j, Tick now) {
  const double dt = ToSeconds(now - j.idle_from);
  j.idle += j.idle_rate * j.full_gpus * dt;
  j.shrunk += (1 - j.idle_rate) * j.full_gpus * dt;
  j.idle_from = now;
}

void Simulation::Log(Tick now, const std::string& what) {
  if (options_.record_log) run_.log.push_back(std::to_string(now) + " " + what);
}

void Simulation::Timeline(TimelineEntry e) {
  if (run_.timeline.size() >= options_.timeline_limit) {
    run_.timeline_truncated = true;
    return;
  }
  run_.timeline.push_back(std::move(e));
}

void Simulation::SampleProgress(Tick now) {
  double weighted = 0, gpus = 0;
  for (const auto& j : jobs_) {
    double p = j.progress;
    if (j.phase == Phase::kRunning) p += j.rate() * ToSeconds(now - j.seg_start);
    weighted += p * j.full_gpus;
    gpus += j.full_gpus;
  }
  const double hours = gpus > 0 ? weighted / gpus / 3600 : 0;
  run_.progress.emplace_back(ToSeconds(now), hours);
}

void Simulation::Handle(const FailureHit& f, Tick now) {
  const FailureEvent& e = events_[f.index];
  const Tick repair_mean = FromSeconds(repairs_[e.component].repair_hours * 3600);
  Tick repair = e.repair >= 0 ? e.repair : repair_mean;
  std::vector<std::size_t> hit;
  std::string target;
  switch (UnitOf(e.component)) {
    case FailureUnit::kGpu:
    case FailureUnit::kNode: {
      const NodeId n(e.target);
      target = NodeName(n);
      if (e.lemon && lemon_fixed_[n.value]) {
        ++run_.failures_ignored;  // the lemon was rebuilt after a drain
        return;
      }
      if (e.component == Component::kSoftware) {
        // The node stays up; only a job running there notices.
        if (!Usable(n) || owner_[n.value] < 0) {
          ++run_.failures_ignored;
          return;
        }
        ++run_.failures;
        Log(now, "failure software on " + target);
        hit.push_back(static_cast<std::size_t>(owner_[n.value]));
        break;
      }
      if (node_down_[n.value]) {
        ++run_.failures_ignored;  // already out for repair
        return;
      }
      ++run_.failures;
      auto& times = failure_times_[n.value];
      times.push_back(now);
      bool drained = false;
      if (drain_ && options_.drain.ShouldDrain(times, now)) {
        drained = true;
        repair = options_.drain_repair;
        lemon_fixed_[n.value] = 1;
        times.clear();
        ++run_.drained;
      }
      Log(now, "failure " + std::string(ComponentName(e.component)) + " on " + target +
                   (drained ? " (drained)" : ""));
      if (drained) {
        Timeline(
            {now, "drain",
             owner_[n.value] >= 0 ? jobs_[static_cast<std::size_t>(owner_[n.value])].w.name : "",
             std::string(ComponentName(e.component)), target, -1, -1,
             std::to_string(static_cast<int>(options_.drain.threshold)) + " failures within " +
                 std::to_string(static_cast<int>(ToSeconds(options_.drain.window) / 86400)) +
                 " days: out for a deep repair"});
      }
      node_down_[n.value] = 1;
      queue_.Push(now + repair, NodeBack{n.value});
      NodeDown(n, &hit);
      break;
    }
    case FailureUnit::kLeaf: {
      const std::uint32_t leaf = e.target;
      target = topo_.leaf_names[leaf];
      if (leaf_down_[leaf]) {
        ++run_.failures_ignored;
        return;
      }
      ++run_.failures;
      Log(now, "failure leaf_switch " + target);
      // Nodes that were usable until now lose their network.
      std::vector<NodeId> affected;
      for (NodeId n : topo_.leaf_nodes[leaf]) {
        if (Usable(n)) affected.push_back(n);
      }
      leaf_down_[leaf] = 1;
      queue_.Push(now + repair, LeafBack{leaf});
      for (NodeId n : affected) NodeDown(n, &hit);
      break;
    }
  }
  std::sort(hit.begin(), hit.end());
  hit.erase(std::unique(hit.begin(), hit.end()), hit.end());
  for (std::size_t ji : hit) JobFault(ji, now, e, target);
}

void Simulation::NodeDown(NodeId n, std::vector<std::size_t>* hit_jobs) {
  state_.SetHealthy(n, false);
  if (is_spare_[n.value]) {
    RemoveSpare(n);
    Refill();
  }
  if (owner_[n.value] >= 0) hit_jobs->push_back(static_cast<std::size_t>(owner_[n.value]));
}

void Simulation::NodeUp(NodeId n, Tick now) {
  if (!Usable(n)) return;
  state_.SetHealthy(n, true);
  Log(now, "back " + NodeName(n));
  Refill();
}

void Simulation::Handle(const NodeBack& b, Tick now) {
  node_down_[b.node] = 0;
  NodeUp(NodeId(b.node), now);
  RetryWaiting(now);
}

void Simulation::Handle(const LeafBack& b, Tick now) {
  leaf_down_[b.leaf] = 0;
  Log(now, "back " + topo_.leaf_names[b.leaf]);
  for (NodeId n : topo_.leaf_nodes[b.leaf]) NodeUp(n, now);
  RetryWaiting(now);
}

void Simulation::RetryWaiting(Tick now) {
  for (std::size_t ji = 0; ji < jobs_.size(); ++ji) {
    Job& j = jobs_[ji];
    if (j.phase != Phase::kWaiting || j.retry_pending) continue;
    j.retry_pending = true;
    queue_.Push(now, JobEvent{JobEvent::kRetry, ji, j.epoch});
  }
}

void Simulation::JobFault(std::size_t ji, Tick now, const FailureEvent& f,
                          const std::string& target) {
  Job& j = jobs_[ji];
  ++run_.job_failures;
  for (const auto& t : j.placement) {
    if (!Usable(t.node)) j.episode_failed.push_back(t.node);
  }
  TimelineEntry entry{now, "failure", j.w.name, std::string(ComponentName(f.component)), target};
  switch (j.phase) {
    case Phase::kRunning:
      Advance(j, now);
      [[fallthrough]];
    case Phase::kCheckpointing: {
      if (j.phase == Phase::kCheckpointing) FlushStall(j, now);
      const double lost = j.progress - j.durable;
      j.redone += lost * j.full_gpus;
      j.progress = j.durable;
      j.phase = Phase::kDown;
      j.episode_start = now;
      j.idle_from = now;
      j.idle_rate = j.rate();
      j.growing = false;
      ++j.interruptions;
      ++run_.interruptions;
      ++j.epoch;
      queue_.Push(now + options_.detect, JobEvent{JobEvent::kDetect, ji, j.epoch});
      entry.lost_seconds = lost;
      Log(now, j.w.name + " stops, loses " + std::to_string(static_cast<std::int64_t>(lost)) +
                   " s of training");
      Timeline(entry);
      // Two points: the progress just before and just after the loss.
      j.progress += lost;
      SampleProgress(now);
      j.progress -= lost;
      SampleProgress(now);
      return;
    }
    case Phase::kRestarting:
      // The restart itself was hit: start the recovery over, from detection.
      if (j.growing) {
        FlushIdle(j, now);
        j.growing = false;
        j.episode_start = now;
        ++j.interruptions;
        ++run_.interruptions;
      }
      j.phase = Phase::kDown;
      ++j.epoch;
      queue_.Push(now + options_.detect, JobEvent{JobEvent::kDetect, ji, j.epoch});
      entry.event = "failure-in-recovery";
      Log(now, j.w.name + " hit again while restarting");
      Timeline(entry);
      return;
    case Phase::kDown:
    case Phase::kWaiting:
      // Already stopped; the decision (or the next retry) sees every failed node.
      entry.event = "failure-in-recovery";
      Timeline(entry);
      return;
  }
}

void Simulation::Decide(std::size_t ji, Tick now) {
  Job& j = jobs_[ji];
  const RecoveryDecision d = policy_.Decide(Request(j), View());
  Apply(ji, d, now);
}

void Simulation::Apply(std::size_t ji, const RecoveryDecision& d, Tick now) {
  Job& j = jobs_[ji];
  const std::string kind(DecisionKindName(d.kind));
  Log(now, j.w.name + " " + kind + ": " + d.reason);
  if (d.kind == Kind::kWait) {
    if (!j.waited) {
      ++run_.waits;
      j.waited = true;
      Timeline({now, "wait", j.w.name, "", "", -1, -1, d.reason});
    }
    j.phase = Phase::kWaiting;
    return;
  }
  std::vector<NodeId> freed;
  int cold = 0, warm = 0;
  const auto release = [&](const TaskPlacement& t) {
    state_.Release({t});
    owner_[t.node.value] = -1;
    freed.push_back(t.node);
  };
  const auto take = [&](const TaskPlacement& t) {
    if (!state_.Apply({t})) {
      error_ = Error{Error::Code::kInternal, "recovery put " + j.w.name + " on " +
                                                 NodeName(t.node) + ", where it does not fit"};
      return;
    }
    owner_[t.node.value] = static_cast<int>(ji);
    if (is_spare_[t.node.value]) {
      RemoveSpare(t.node);
      ++warm;
      ++run_.spares_used;
    } else {
      ++cold;
    }
  };
  const auto was_failed = [&](NodeId n) {
    return std::find(j.episode_failed.begin(), j.episode_failed.end(), n) != j.episode_failed.end();
  };
  switch (d.kind) {
    case Kind::kRequeue:
      for (const auto& t : j.placement) release(t);
      for (const auto& t : d.placement) take(t);
      cold += warm;  // a requeued gang starts from scratch everywhere
      warm = 0;
      ++run_.requeues;
      break;
    case Kind::kReplace:
      for (int r : d.replaced_ranks) {
        const auto& old = j.placement[static_cast<std::size_t>(r)];
        const auto& now_at = d.placement[static_cast<std::size_t>(r)];
        release(old);
        take(now_at);
        ++run_.replacements;
        run_.replacements_off_leaf += topo_.leaf(old.node) != topo_.leaf(now_at.node);
      }
      if (d.replaced_ranks.empty()) ++run_.restarts_in_place;
      break;
    case Kind::kResize: {
      // Tasks only in the old placement go back; tasks only in the new one are taken.
      const auto less = [](const TaskPlacement& a, const TaskPlacement& b) {
        return std::tie(a.node, a.gpu_mask) < std::tie(b.node, b.gpu_mask);
      };
      Placement before = j.placement, after = d.placement, gone, added;
      std::sort(before.begin(), before.end(), less);
      std::sort(after.begin(), after.end(), less);
      std::set_difference(before.begin(), before.end(), after.begin(), after.end(),
                          std::back_inserter(gone), less);
      std::set_difference(after.begin(), after.end(), before.begin(), before.end(),
                          std::back_inserter(added), less);
      for (const auto& t : gone) release(t);
      for (const auto& t : added) take(t);
      if (d.placement.size() < j.placement.size()) ++run_.shrinks;
      break;
    }
    case Kind::kWait:
      break;
  }
  if (error_) return;
  // Nodes that failed and came back while the job waited restart cold too.
  for (const auto& t : d.placement) {
    if (d.kind != Kind::kRequeue && was_failed(t.node) && Usable(t.node)) ++cold;
  }
  j.placement = d.placement;
  Refill();  // freed nodes may join the pool; used spares are replaced
  Tick provisioning = 0;
  if (cold > 0) {
    provisioning = options_.cold_start + options_.cold_start_per_node * cold;
  } else if (warm > 0) {
    provisioning = options_.warm_start;
  }
  j.phase = Phase::kRestarting;
  ++j.epoch;
  queue_.Push(now + provisioning + options_.restart, JobEvent{JobEvent::kRestarted, ji, j.epoch});
  Timeline({now, j.growing ? "grow" : "recover", j.w.name, "", "", -1, -1, kind + ": " + d.reason});
  if (!freed.empty()) RetryWaiting(now);
}

void Simulation::Restarted(std::size_t ji, Tick now) {
  Job& j = jobs_[ji];
  FlushIdle(j, now);
  const double latency = ToSeconds(now - j.episode_start);
  if (!j.growing) {
    run_.recovery_seconds.push_back(latency);
    Timeline({now, "restart", j.w.name, "", "", -1, latency,
              std::to_string(j.placement.size()) + " workers"});
  } else {
    ++run_.grows;
  }
  Log(now, j.w.name + " runs again on " + std::to_string(j.placement.size()) + " workers after " +
               std::to_string(static_cast<std::int64_t>(latency)) + " s");
  j.phase = Phase::kRunning;
  j.growing = false;
  j.waited = false;
  j.episode_failed.clear();
  j.seg_start = now;
  queue_.Push(now + j.interval, JobEvent{JobEvent::kCheckpointStart, ji, j.epoch});
  SampleProgress(now);
}

void Simulation::CheckpointDone(std::size_t ji, Tick now) {
  Job& j = jobs_[ji];
  FlushStall(j, now);
  j.durable = j.progress;
  if (static_cast<int>(j.placement.size()) < j.full) {
    RecoveryRequest req;
    req.job = &j.w;
    req.placement = j.placement;
    req.full_workers = j.full;
    if (auto grow = policy_.Grow(req, View())) {
      // A planned pause right after a checkpoint: nothing is lost, the job is idle until the
      // bigger gang has started.
      j.growing = true;
      j.episode_start = now;
      j.idle_from = now;
      j.idle_rate = j.rate();
      Apply(ji, *grow, now);
      return;
    }
  }
  j.phase = Phase::kRunning;
  j.seg_start = now;
  queue_.Push(now + j.interval, JobEvent{JobEvent::kCheckpointStart, ji, j.epoch});
}

void Simulation::Handle(const JobEvent& e, Tick now) {
  Job& j = jobs_[e.job];
  if (e.epoch != j.epoch) return;  // overtaken by a failure or a newer decision
  switch (e.kind) {
    case JobEvent::kDetect:
      if (j.phase == Phase::kDown) Decide(e.job, now);
      break;
    case JobEvent::kRetry:
      j.retry_pending = false;
      if (j.phase == Phase::kWaiting) Decide(e.job, now);
      break;
    case JobEvent::kRestarted:
      if (j.phase == Phase::kRestarting) Restarted(e.job, now);
      break;
    case JobEvent::kCheckpointStart:
      if (j.phase != Phase::kRunning) break;
      Advance(j, now);
      j.phase = Phase::kCheckpointing;
      j.stall_start = now;
      queue_.Push(now + options_.checkpoint_cost,
                  JobEvent{JobEvent::kCheckpointDone, e.job, j.epoch});
      break;
    case JobEvent::kCheckpointDone:
      if (j.phase == Phase::kCheckpointing) CheckpointDone(e.job, now);
      break;
  }
}

Result<FailuresRun> Simulation::Run(const std::string& name, const std::vector<Tick>& intervals) {
  run_.policy = name;
  const int gpn = std::max(1, cluster_.nodes().empty() ? 1 : cluster_.node(NodeId(0)).gpu_count);
  for (std::size_t i = 0; i < options_.job_gpus.size(); ++i) {
    const int gpus = options_.job_gpus[i];
    if (gpus <= 0 || gpus % gpn != 0) {
      return InvalidArgument("job-gpus: " + std::to_string(gpus) + " is not a whole number of " +
                             std::to_string(gpn) + "-GPU nodes");
    }
    Job j;
    j.w.id = JobId(static_cast<std::uint32_t>(i));
    j.w.name = options_.job_gpus.size() == 1 ? "pretrain" : "pretrain-" + std::to_string(i);
    j.w.groups.push_back({"worker", gpus / gpn, TaskShape{0, 0, gpn, 1000}});
    j.full = gpus / gpn;
    j.full_gpus = gpus;
    j.interval = intervals.empty() ? options_.checkpoint_interval : intervals[i];
    j.w.checkpoint_interval = j.interval;
    if (j.interval <= 0) return InvalidArgument("checkpoint interval: must be positive");
    jobs_.push_back(std::move(j));
  }
  if (auto ok = PlaceJobs(); !ok) return std::unexpected(ok.error());

  for (std::size_t i = 0; i < events_.size(); ++i) {
    if (events_[i].time < options_.horizon) queue_.Push(events_[i].time, FailureHit{i});
  }
  for (std::size_t ji = 0; ji < jobs_.size(); ++ji) {
    queue_.Push(jobs_[ji].interval, JobEvent{JobEvent::kCheckpointStart, ji, 0});
  }
  SampleProgress(0);
  const auto visit = [&](const auto& payload, Tick now) { Handle(payload, now); };
  while (!queue_.empty() && queue_.top().time < options_.horizon) {
    auto e = queue_.Pop();
    spare_gpu_seconds_ +=
        spare_count_ * ToSeconds(e.time - last_time_) * (cluster_.nodes().empty() ? 0 : gpn);
    last_time_ = e.time;
    std::visit([&](const auto& p) { visit(p, e.time); }, e.payload);
    if (error_) return std::unexpected(*error_);
  }
  const Tick end = options_.horizon;
  spare_gpu_seconds_ += spare_count_ * ToSeconds(end - last_time_) * gpn;

  // Close the books at the end of the run: unsaved work at the end is not lost.
  double weighted = 0, gpus = 0;
  for (auto& j : jobs_) {
    switch (j.phase) {
      case Phase::kRunning:
        Advance(j, end);
        break;
      case Phase::kCheckpointing:
        FlushStall(j, end);
        break;
      default:
        FlushIdle(j, end);
        ++run_.unfinished_recoveries;
        break;
    }
    FailuresJobResult r;
    r.name = j.w.name;
    r.gpus = static_cast<int>(j.full_gpus);
    r.ettr = j.progress / ToSeconds(end);
    r.progress_hours = j.progress / 3600;
    r.interruptions = j.interruptions;
    r.checkpoint_interval = j.interval;
    run_.jobs.push_back(r);
    weighted += j.progress * j.full_gpus;
    gpus += j.full_gpus;
    run_.productive_gpu_hours += j.progress * j.full_gpus / 3600;
    run_.redone_gpu_hours += j.redone / 3600;
    run_.recovery_idle_gpu_hours += j.idle / 3600;
    run_.checkpoint_gpu_hours += j.stall / 3600;
    run_.shrunk_gpu_hours += j.shrunk / 3600;
  }
  run_.ettr = gpus > 0 ? weighted / gpus / ToSeconds(end) : 0;
  run_.spare_idle_gpu_hours = spare_gpu_seconds_ / 3600;
  SampleProgress(end);
  return std::move(run_);
}

// Young's first-order optimum for the checkpoint interval: sqrt(2 · δ · M).
Tick YoungDaly(Tick cost, double mtbf_seconds) {
  if (mtbf_seconds <= 0 || !std::isfinite(mtbf_seconds)) return kNever / 4;
  return std::max<Tick>(kSecond, FromSeconds(std::sqrt(2 * ToSeconds(cost) * mtbf_seconds)));
}

void AddRun(FailuresRun& sum, const FailuresRun& r) {
  sum.productive_gpu_hours += r.productive_gpu_hours;
  sum.redone_gpu_hours += r.redone_gpu_hours;
  sum.recovery_idle_gpu_hours += r.recovery_idle_gpu_hours;
  sum.checkpoint_gpu_hours += r.checkpoint_gpu_hours;
  sum.shrunk_gpu_hours += r.shrunk_gpu_hours;
  sum.spare_idle_gpu_hours += r.spare_idle_gpu_hours;
  sum.recovery_seconds.insert(sum.recovery_seconds.end(), r.recovery_seconds.begin(),
                              r.recovery_seconds.end());
  sum.failures += r.failures;
  sum.failures_ignored += r.failures_ignored;
  sum.job_failures += r.job_failures;
  sum.interruptions += r.interruptions;
  sum.requeues += r.requeues;
  sum.replacements += r.replacements;
  sum.replacements_off_leaf += r.replacements_off_leaf;
  sum.spares_used += r.spares_used;
  sum.restarts_in_place += r.restarts_in_place;
  sum.shrinks += r.shrinks;
  sum.grows += r.grows;
  sum.waits += r.waits;
  sum.drained += r.drained;
  sum.unfinished_recoveries += r.unfinished_recoveries;
  if (sum.jobs.empty()) {
    sum.jobs = r.jobs;
  } else {
    for (std::size_t i = 0; i < sum.jobs.size(); ++i) {
      sum.jobs[i].ettr += r.jobs[i].ettr;
      sum.jobs[i].progress_hours += r.jobs[i].progress_hours;
      sum.jobs[i].interruptions += r.jobs[i].interruptions;
    }
  }
  sum.ettr += r.ettr;
}

}  // namespace

Result<FailuresRun> SimulateFailures(const Cluster& cluster, const RecoveryTopology& topology,
                                     const std::vector<FailureEvent>& events,
                                     const FailureModel& repairs, const FailuresOptions& options,
                                     const std::string& policy,
                                     const std::vector<Tick>& checkpoint_intervals) {
  const auto [name, drain] = SplitPolicy(policy);
  auto p = MakeRecoveryPolicy(name, options.recovery);
  if (!p) return std::unexpected(p.error());
  if (!checkpoint_intervals.empty() && checkpoint_intervals.size() != options.job_gpus.size()) {
    return InvalidArgument("checkpoint intervals: one per job");
  }
  Simulation sim(cluster, topology, events, repairs, options, **p, drain);
  return sim.Run(policy, checkpoint_intervals);
}

Result<FailureSource> LoadFailureSource(const std::string& spec, const Cluster& cluster,
                                        const RecoveryTopology& topology, Tick horizon) {
  FailureSource source;
  source.spec = spec;
  source.repairs = *FailurePreset("llama3");
  if (spec.empty()) return InvalidArgument("--failures: give a preset (llama3, ...) or a file");
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool exists = fs::exists(spec, ec);
  if (!exists) {
    auto preset = FailurePreset(spec);
    if (!preset) {
      return NotFound(spec +
                      ": no such file, and not a failure model preset (llama3, "
                      "llama3-lemons, none)");
    }
    source.model = *preset;
    return source;
  }
  std::string ext = fs::path(spec).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".yaml" || ext == ".yml") {
    auto m = LoadFailureModelYaml(spec);
    if (!m) return std::unexpected(m.error());
    source.model = *m;
    source.repairs = *m;
    return source;
  }
  auto events = LoadFailureFile(spec, cluster, topology, horizon);
  if (!events) return std::unexpected(events.error());
  source.events = std::move(*events);
  return source;
}

Result<FailuresResult> RunFailuresExperiment(const Cluster& cluster, const FailureSource& source,
                                             const FailuresOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  if (options.job_gpus.empty()) return InvalidArgument("job-gpus: give at least one job");
  if (options.horizon <= 0) return InvalidArgument("days: must be positive");
  if (options.policies.empty()) return InvalidArgument("recovery: give at least one policy");
  for (const auto& p : options.policies) {
    auto made = MakeRecoveryPolicy(SplitPolicy(p).first, options.recovery);
    if (!made) return std::unexpected(made.error());
  }
  const RecoveryTopology topology = BuildRecoveryTopology(cluster, options.topology);
  FailuresResult result;
  result.source = source;
  const int seeds = source.model ? std::max(1, options.seeds) : 1;
  std::vector<FailureSchedule> schedules;
  for (int s = 0; s < seeds; ++s) {
    if (source.model) {
      schedules.push_back(GenerateFailures(*source.model, cluster, topology, options.horizon,
                                           Rng::Mix(options.seed, static_cast<std::uint64_t>(s))));
    } else {
      schedules.push_back(FailureSchedule{source.events, {}});
    }
  }
  result.failure_events = static_cast<std::int64_t>(schedules.front().events.size());
  result.lemons = static_cast<std::int64_t>(schedules.front().lemons.size());
  const FailureModel& repairs = source.model ? *source.model : source.repairs;

  // Each job's MTBF: from the model's rates for a gang that size, or observed in the file by a
  // first run at an hourly checkpoint.
  const int gpn = std::max(1, cluster.nodes().empty() ? 1 : cluster.node(NodeId(0)).gpu_count);
  const double nodes_per_leaf =
      static_cast<double>(cluster.node_count()) / std::max(1, topology.leaf_count());
  std::vector<double> mtbf(options.job_gpus.size(), 0);
  if (source.model) {
    for (std::size_t i = 0; i < mtbf.size(); ++i) {
      const int nodes = options.job_gpus[i] / gpn;
      const int leaves = static_cast<int>(std::ceil(nodes / nodes_per_leaf));
      const double per_hour = source.model->JobFailuresPerHour(nodes, gpn, leaves);
      mtbf[i] = per_hour > 0 ? 3600 / per_hour : std::numeric_limits<double>::infinity();
    }
  } else {
    auto probe = SimulateFailures(cluster, topology, schedules.front().events, repairs, options,
                                  SplitPolicy(options.policies.front()).first,
                                  std::vector<Tick>(options.job_gpus.size(), kHour));
    if (!probe) return std::unexpected(probe.error());
    for (std::size_t i = 0; i < mtbf.size(); ++i) {
      const int n = probe->jobs[i].interruptions;
      mtbf[i] = n > 0 ? ToSeconds(options.horizon) / n : std::numeric_limits<double>::infinity();
    }
  }
  std::vector<Tick> young_daly(mtbf.size());
  for (std::size_t i = 0; i < mtbf.size(); ++i) {
    young_daly[i] = std::min(YoungDaly(options.checkpoint_cost, mtbf[i]), options.horizon);
  }
  std::vector<Tick> intervals = young_daly;
  if (options.checkpoint_interval > 0) {
    std::fill(intervals.begin(), intervals.end(), options.checkpoint_interval);
  }
  result.job_mtbf_seconds = mtbf.front();
  result.young_daly_interval = young_daly.front();
  result.checkpoint_interval = intervals.front();

  const auto aggregate = [&](const std::string& policy,
                             const std::vector<Tick>& iv) -> Result<FailuresPolicyResult> {
    FailuresPolicyResult out;
    out.policy = policy;
    out.seeds = seeds;
    std::vector<double> ettrs;
    for (int s = 0; s < seeds; ++s) {
      auto r = SimulateFailures(cluster, topology, schedules[static_cast<std::size_t>(s)].events,
                                repairs, options, policy, iv);
      if (!r) return std::unexpected(r.error());
      ettrs.push_back(r->ettr);
      AddRun(out.total, *r);
      if (s == 0) out.first = std::move(*r);
    }
    out.total.policy = policy;
    out.total.spares_initial = out.first.spares_initial;
    out.ettr = out.total.ettr / seeds;
    out.ettr_min = *std::min_element(ettrs.begin(), ettrs.end());
    out.ettr_max = *std::max_element(ettrs.begin(), ettrs.end());
    return out;
  };

  for (const auto& policy : options.policies) {
    auto r = aggregate(policy, intervals);
    if (!r) return std::unexpected(r.error());
    // The sweep: the same failure draws at each interval (common random numbers), so the
    // curve is smooth and its maximum is the simulated best interval.
    double best = r->ettr;
    r->best_interval = intervals.front();
    std::vector<std::pair<Tick, double>> sweep;
    for (double f : options.sweep_factors) {
      std::vector<Tick> iv(young_daly.size());
      for (std::size_t i = 0; i < iv.size(); ++i) {
        iv[i] = std::max<Tick>(kSecond, FromSeconds(ToSeconds(young_daly[i]) * f));
      }
      if (iv == intervals) {
        sweep.emplace_back(iv.front(), r->ettr);
        continue;
      }
      auto point = aggregate(policy, iv);
      if (!point) return std::unexpected(point.error());
      sweep.emplace_back(iv.front(), point->ettr);
      if (point->ettr > best) {
        best = point->ettr;
        r->best_interval = iv.front();
      }
    }
    std::sort(sweep.begin(), sweep.end());
    r->sweep = std::move(sweep);
    result.policies.push_back(std::move(*r));
  }
  result.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

}  // namespace tessera
