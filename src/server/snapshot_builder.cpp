#include "server/snapshot_builder.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>

#include "sched/colocation/oversell.h"
#include "sched/elastic/elastic_resize.h"
#include "sched/placement/task_placer.h"
#include "server/job_gates.h"
#include "server/live_task_index.h"
#include "server/pending_queue.h"
#include "server/resize_applier.h"
#include "server/run_estimates.h"
#include "server/service_scaling.h"
#include "spec/protocol.h"

namespace tessera {

bool Schedulable(const JobState& job) {
  if (job.rec.held || job.rec.finished_ms != 0 || !job.blocked_by.empty()) return false;
  for (const auto& u : job.units) {
    if (u.phase == UnitPhase::kPending || u.phase == UnitPhase::kRunning) return true;
  }
  return false;
}

namespace {

// Marks the nodes the scheduler must not use (not Ready, running strays, cordoned) unhealthy.
void MarkUnschedulable(const ControllerState& state, const CycleCluster& cluster,
                       ClusterState& working) {
  for (const auto& [name, node] : state.nodes) {
    auto nid = cluster.ids.find(name);
    if (nid != cluster.ids.end() && !node.schedulable()) working.SetHealthy(nid->second, false);
  }
}

// What co-location needs of the live units besides their placements.
struct LiveUnits {
  std::set<UnitKey> oversold;                          // on online replicas' credit
  std::map<UnitKey, std::vector<std::int64_t>> tasks;  // their live tasks
};

// Takes every live task's resources in `working` (an oversold task's CPU and memory only: its
// GPU share is lent from online replicas, ChargedPlacement) and marks unschedulable nodes
// unhealthy; returns the placements of the units holding them, in rank order, and fills `live`.
UnitPlacements TakeLiveTasks(const ControllerState& state, const CycleCluster& cluster,
                             ClusterState& working, std::vector<std::string>& problems,
                             LiveUnits& live) {
  // Visited node by node; each unit's ranks are put in rank order at the end (a shrink keeps
  // ranks 0..k-1 where they run, so placement[i] must be rank i's).
  std::map<UnitKey, std::vector<std::pair<int, TaskPlacement>>> by_rank;
  for (const auto& [name, ids] : state.live_by_node) {
    auto nid = cluster.ids.find(name);
    if (nid == cluster.ids.end()) continue;
    for (auto id : ids) {
      const TaskRecord& t = state.tasks.at(id);
      const TaskPlacement tp = PlacementOfTask(t, nid->second);
      if (t.oversold) live.oversold.insert({t.job_id, t.unit});
      live.tasks[{t.job_id, t.unit}].push_back(id);
      if (!working.Apply(ChargedPlacement({tp}, t.oversold))) {
        problems.push_back("task " + std::to_string(id) + " does not fit its node " + name +
                           " in the rebuilt state");
      }
      by_rank[{t.job_id, t.unit}].emplace_back(t.rank, tp);
    }
  }
  UnitPlacements placements;
  for (auto& [unit, ranks] : by_rank) {
    std::stable_sort(ranks.begin(), ranks.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    Placement& p = placements[unit];
    for (const auto& [rank, tp] : ranks) p.push_back(tp);
  }
  MarkUnschedulable(state, cluster, working);
  return placements;
}

// Co-location's `used` share of a running unit (JobView::used_gpu_milli): the highest
// utilisation its tasks reported over the usage window, in milli of each GPU and at most what
// each holds; -1 (all it holds) when one of them has not reported within the window.
std::int32_t UsedGpuMilli(const ControllerState& state, const std::vector<std::int64_t>& tasks,
                          Tick since) {
  std::int32_t used = 0;
  bool any = false;
  for (auto id : tasks) {
    const TaskRecord& t = state.tasks.at(id);
    if (t.gpus.empty()) continue;
    const auto high = TaskWindowMax(state.gpu_usage, id, since);
    if (!high) return -1;
    any = true;
    used = std::max(
        used, std::min(t.gpu_milli, static_cast<std::int32_t>(std::lround(*high * kMilliPerGpu))));
  }
  return any ? used : -1;
}

}  // namespace

TaskPlacement PlacementOfTask(const TaskRecord& t, NodeId node) {
  TaskPlacement tp;
  tp.node = node;
  for (int g : t.gpus) tp.gpu_mask |= static_cast<std::uint16_t>(1U << g);
  tp.gpu_milli = t.gpus.empty() ? 0 : t.gpu_milli;
  tp.cpu_milli = t.cpu_milli;
  tp.memory_mib = t.memory_mib;
  return tp;
}

void AddRegisteredNodes(const ControllerState& state, const std::vector<std::string>& levels,
                        Cluster& cluster, CycleCluster* out) {
  Topology topology;
  topology.levels = levels;
  topology.domain_names.resize(levels.size());
  std::vector<std::map<std::string, std::uint32_t>> index(levels.size());
  for (const auto& [name, node] : state.nodes) {
    std::vector<std::uint32_t> domain;
    if (!levels.empty()) {
      auto place = ParseJson(node.rec.topology_json);
      for (std::size_t l = 0; l < levels.size(); ++l) {
        std::string d = "none";
        if (place && place->is_object() && place->contains(levels[l]) &&
            (*place)[levels[l]].is_string()) {
          d = (*place)[levels[l]].get<std::string>();
        }
        auto [it, added] = index[l].try_emplace(d, topology.domain_names[l].size());
        if (added) topology.domain_names[l].push_back(d);
        domain.push_back(it->second);
      }
    }
    auto id = cluster.AddNode(name, node.rec.gpu_model, node.rec.gpu_count, node.rec.cpu_milli,
                              node.rec.memory_mib, std::move(domain));
    if (!id || out == nullptr) continue;
    out->node_names.push_back(name);
    out->ids[name] = *id;
  }
  cluster.set_topology(std::move(topology));
}

CycleCluster BuildCycleCluster(const ControllerState& state,
                               const std::vector<std::string>& levels) {
  CycleCluster out;
  auto cluster = std::make_shared<Cluster>();
  AddRegisteredNodes(state, levels, *cluster, &out);
  out.cluster = std::move(cluster);
  out.generation = state.node_generation;
  return out;
}

namespace {

// Returns whether the job's never-fits reason changed.
bool RefreshJobWorkloads(JobState& job, const CycleCluster& cluster, const ClusterChange* change) {
  if (!Schedulable(job)) return false;
  const bool tasks = job.spec.IndependentTasks();
  const bool kept = change != nullptr && change->same_models;
  if (kept && job.resolved_generation == change->from_generation && !job.unit_workloads.empty())
    job.resolved_generation = cluster.generation;
  if (kept && change->only_added && job.never_fits_generation == change->from_generation &&
      !job.never_fits) {
    job.never_fits_generation = cluster.generation;  // more nodes: what fitted still fits
  }
  if (job.resolved_generation != cluster.generation || job.unit_workloads.empty()) {
    Workload resolved = job.workload;
    ResolveGpuModels(cluster.cluster->models(), resolved);
    if (tasks) resolved.groups[0].count = 1;  // each task of a BatchJob is scheduled alone
    job.unit_workloads.clear();
    const std::size_t units = tasks ? job.units.size() : 1;
    for (std::size_t u = 0; u < units; ++u) {
      auto w = std::make_shared<Workload>(resolved);
      w->id = JobId(job.first_unit_id + static_cast<std::uint32_t>(u));
      job.unit_workloads.push_back(std::move(w));
    }
    job.resolved_generation = cluster.generation;
  }
  if (job.never_fits_generation == cluster.generation) return false;
  const bool have_nodes = cluster.cluster->node_count() > 0;
  auto reason =
      have_nodes ? NeverFitsReason(*cluster.cluster, *job.unit_workloads[0]) : std::nullopt;
  job.never_fits_generation = cluster.generation;
  if (reason == job.never_fits) return false;
  job.never_fits = std::move(reason);
  return true;
}

}  // namespace

std::vector<std::int64_t> RefreshSchedulingWorkloads(ControllerState& state,
                                                     const CycleCluster& cluster,
                                                     const std::vector<std::int64_t>* only,
                                                     const ClusterChange* change) {
  std::vector<std::int64_t> changed;
  if (only == nullptr) {
    for (auto id : state.active) {
      if (RefreshJobWorkloads(state.jobs.at(id), cluster, change)) changed.push_back(id);
    }
    return changed;
  }
  for (auto id : *only) {
    if (!state.active.contains(id)) continue;
    auto it = state.jobs.find(id);
    if (it != state.jobs.end() && RefreshJobWorkloads(it->second, cluster, change))
      changed.push_back(id);
  }
  return changed;
}

ClusterChange CompareClusters(const CycleCluster& before, const CycleCluster& after) {
  ClusterChange out;
  if (!before.cluster || !after.cluster) return out;
  out.from_generation = before.generation;
  const Cluster& a = *before.cluster;
  const Cluster& b = *after.cluster;
  out.same_models = a.models().size() == b.models().size();
  for (int m = 0; out.same_models && m < a.models().size(); ++m)
    out.same_models =
        a.models().Name(static_cast<GpuModelId>(m)) == b.models().Name(static_cast<GpuModelId>(m));
  const Topology& ta = a.topology();
  const Topology& tb = b.topology();
  out.only_added = out.same_models && ta.levels == tb.levels;
  for (const auto& [name, id] : before.ids) {
    if (!out.only_added) break;
    auto it = after.ids.find(name);
    if (it == after.ids.end()) {
      out.only_added = false;
      break;
    }
    const Node& x = a.node(id);
    const Node& y = b.node(it->second);
    out.only_added = x.gpu_model == y.gpu_model && x.gpu_count == y.gpu_count &&
                     x.capacity.cpu_milli == y.capacity.cpu_milli &&
                     x.capacity.memory_mib == y.capacity.memory_mib &&
                     x.domain.size() == y.domain.size();
    for (std::size_t l = 0; out.only_added && l < x.domain.size(); ++l)
      out.only_added = ta.domain_names[l][x.domain[l]] == tb.domain_names[l][y.domain[l]];
  }
  return out;
}

std::vector<PendingUnitView> PendingViewsOf(const ControllerState& state, std::int64_t id,
                                            const JobState& job, Tick now) {
  std::vector<PendingUnitView> out;
  if (!Schedulable(job) || job.unit_workloads.empty() || job.never_fits) return out;
  // BatchJob spec.parallelism; an autoscaled service's replicas wanted (service_scaling.h).
  int free_slots =
      std::min(FreeParallelismSlots(job.spec, job.units), FreeReplicaSlots(state, job));
  for (const auto& unit : job.units) {
    if (unit.phase != UnitPhase::kPending) continue;
    if (IsResizing(job, unit.unit)) continue;  // bound again at its target, not by Schedule
    if (free_slots-- <= 0) continue;
    const auto& w =
        job.unit_workloads[job.spec.IndependentTasks() ? static_cast<std::size_t>(unit.unit) : 0];
    // Run times for backfill, srtf and srsf; earlier runs' GPU-time for las.
    const UnitHistory before = HistoryOf(state, job, unit);
    const Tick remaining = EstimatedRemaining(job.spec, unit, before, now);
    out.push_back({JobView{w.get(), JobPhase::kPending, {}, 0, before.gpu_seconds, remaining, 0},
                   SnapshotUnit{id, unit.unit, unit.attempt, unit.phase}, w});
  }
  return out;
}

bool ReadsEveryRunningJob(const Scheduler& scheduler, const SchedulerConfig& config) {
  const QueuePolicy& policy = scheduler.queue_policy();
  return policy.preemptive() || policy.backfill() || config.priority_preemption ||
         config.colocation.enabled || IsFairSharePolicy(config.queue_policy);
}

std::optional<std::size_t> CycleSnapshot::IndexOf(JobId id) const {
  auto it = index_.find(id.value);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

const SnapshotUnit* CycleSnapshot::UnitOf(JobId id) const {
  if (auto i = IndexOf(id)) return &units[*i];
  if (queue == nullptr) return nullptr;
  const PendingUnitView* v = queue->Find(id);
  return v != nullptr ? &v->unit : nullptr;
}

const JobView* CycleSnapshot::ViewOf(JobId id) const {
  if (auto i = IndexOf(id)) return &snap.jobs[*i];
  if (queue == nullptr) return nullptr;
  const PendingUnitView* v = queue->Find(id);
  return v != nullptr ? &v->view : nullptr;
}

namespace {

// The jobs a snapshot looks at: every active one, or with a queue only those with live tasks
// and those the queue leaves out, in id order either way.
std::vector<std::int64_t> JobsToLookAt(const ControllerState& state,
                                       const UnitPlacements& placements, const PendingQueue* queue,
                                       bool every_running) {
  if (queue == nullptr) return {state.active.begin(), state.active.end()};
  std::vector<std::int64_t> live;
  if (every_running) {
    for (const auto& [unit, placement] : placements) {
      if (live.empty() || live.back() != unit.first) live.push_back(unit.first);
    }
  } else {
    live.assign(queue->elastic_jobs().begin(), queue->elastic_jobs().end());
  }
  std::vector<std::int64_t> out;
  std::set_union(live.begin(), live.end(), queue->uncached().begin(), queue->uncached().end(),
                 std::back_inserter(out));
  return out;  // finished jobs among them are skipped by the caller
}

}  // namespace

CycleSnapshot BuildCycleSnapshot(const ControllerState& state, const CycleCluster& cluster,
                                 Tick now, std::uint64_t seed,
                                 std::shared_ptr<std::uint64_t> versions, Tick usage_window_ms,
                                 const PendingQueue* queue, const LiveTaskIndex* live_tasks,
                                 bool every_running) {
  every_running = every_running || queue == nullptr;
  CycleSnapshot out;
  out.cluster = cluster;
  out.queue = queue;
  LiveUnits taken;
  UnitPlacements taken_placements;
  if (live_tasks != nullptr) {
    out.working = std::make_unique<ClusterState>(live_tasks->taken());
    MarkUnschedulable(state, cluster, *out.working);
    out.problems = live_tasks->Problems();
  } else {
    out.working = std::make_unique<ClusterState>(*cluster.cluster, std::move(versions));
    taken_placements = TakeLiveTasks(state, cluster, *out.working, out.problems, taken);
  }
  const UnitPlacements& placements =
      live_tasks != nullptr ? live_tasks->placements() : taken_placements;
  const std::set<UnitKey>& oversold =
      live_tasks != nullptr ? live_tasks->oversold() : taken.oversold;
  const auto& unit_tasks = live_tasks != nullptr ? live_tasks->unit_tasks() : taken.tasks;
  TakeResizeTargets(state, cluster, *out.working);
  Snapshot& snap = out.snap;
  snap.now = now;
  snap.seed = seed;
  if (queue != nullptr) snap.pending_in_order = &queue->in_order();
  const std::vector<std::int64_t> jobs = JobsToLookAt(state, placements, queue, every_running);
  for (auto id : jobs) {
    auto it = state.jobs.find(id);
    if (it == state.jobs.end()) continue;
    const JobState& job = it->second;
    if (!Schedulable(job) || job.unit_workloads.empty()) continue;  // finished ones too
    // The queue's jobs have their pending views there.
    std::vector<PendingUnitView> pending;
    if (queue == nullptr || !queue->Holds(id)) pending = PendingViewsOf(state, id, job, now);
    std::size_t next_pending = 0;
    for (const auto& unit : job.units) {
      if (unit.phase == UnitPhase::kPending) {
        if (next_pending >= pending.size() || pending[next_pending].unit.unit != unit.unit)
          continue;
        PendingUnitView& v = pending[next_pending++];
        out.index_[v.workload->id.value] = out.units.size();
        snap.jobs.push_back(std::move(v.view));
        out.units.push_back(v.unit);
        out.workloads.push_back(std::move(v.workload));
        continue;
      }
      if (unit.phase != UnitPhase::kRunning) continue;
      if (IsResizing(job, unit.unit)) continue;  // bound again at its target, not by Schedule
      if (!every_running && !IsElastic(job.workload)) continue;
      auto pit = placements.find({id, unit.unit});
      if (pit == placements.end()) continue;
      const auto& w =
          job.unit_workloads[job.spec.IndependentTasks() ? static_cast<std::size_t>(unit.unit) : 0];
      const UnitHistory before = HistoryOf(state, job, unit);
      const Tick remaining = EstimatedRemaining(job.spec, unit, before, now);
      // Its last checkpoint, estimated from the spec's checkpoint.intervalSeconds (the program
      // gets it as TESSERA_CHECKPOINT_INTERVAL_SECONDS); unknown: everything since the start.
      const Tick interval = w->checkpoint_interval;
      const Tick saved =
          interval > 0 ? LastCheckpointAt(unit.started_ms, now, interval) : unit.started_ms;
      JobView v{
          w.get(), JobPhase::kRunning, pit->second, unit.started_ms, before.gpu_seconds, remaining,
          saved};
      v.oversold = oversold.contains({id, unit.unit});
      if (usage_window_ms > 0) {
        auto tasks = unit_tasks.find({id, unit.unit});
        v.used_gpu_milli = tasks == unit_tasks.end()
                               ? -1
                               : UsedGpuMilli(state, tasks->second, now - usage_window_ms);
      }
      snap.jobs.push_back(std::move(v));
      out.index_[w->id.value] = out.units.size();
      out.units.push_back({id, unit.unit, unit.attempt, unit.phase});
      out.workloads.push_back(w);
    }
  }
  // Gangs being stopped still hold their GPUs in `working`; the scheduler may count them as
  // soon free (priority preemption does, so a preemptor waiting for its victims preempts no
  // one else).
  // A resizing gang releases only the ranks it drops.
  for (const auto& [key, placement] : placements) {
    if (!every_running) break;  // read with every running job only
    const auto& [id, unit_index] = key;
    auto it = state.jobs.find(id);
    if (it == state.jobs.end() || it->second.rec.finished_ms != 0) continue;  // not active
    const JobState& job = it->second;
    if (static_cast<std::size_t>(unit_index) >= job.units.size() ||
        job.units[static_cast<std::size_t>(unit_index)].phase != UnitPhase::kStopping)
      continue;
    if (!IsResizing(job, unit_index)) {
      snap.releasing.push_back(ChargedPlacement(placement, oversold.contains(key)));
    } else if (Placement dropped = DroppedRanks(*job.resize, placement, cluster);
               !dropped.empty()) {
      snap.releasing.push_back(std::move(dropped));
    }
  }
  return out;
}

}  // namespace tessera
