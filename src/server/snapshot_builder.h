// What a scheduling cycle hands to Scheduler::Schedule, built from the controller's state:
// the cluster of registered nodes, a working ClusterState with every live task's GPUs taken
// and unschedulable nodes marked unhealthy, and a Snapshot with one JobView per pending or
// running unit. The snapshot owns (shares) every workload its views point at, so the cycle
// runs Schedule on it after the controller's lock is released.
//
// BuildCycleSnapshot is pure: no clock, lock or I/O; the same state gives the same snapshot.
// Thread-safety: none; the state is read under ControllerCore's mutex.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/cluster.h"
#include "core/cluster_state.h"
#include "sched/scheduler.h"
#include "sched/snapshot.h"
#include "server/controller_state.h"

namespace tessera {

class LiveTaskIndex;
class PendingQueue;

// A task's resources on `node`, as the scheduler places them (its whole GPU share, oversold or
// not: ChargedPlacement decides what the working state takes).
TaskPlacement PlacementOfTask(const TaskRecord& t, NodeId node);

// The registered nodes (in name order) as the scheduler's Cluster; rebuilt only when a node
// is added or changes shape (ControllerState::node_generation).
struct CycleCluster {
  std::shared_ptr<const Cluster> cluster;
  std::vector<std::string> node_names;  // by NodeId
  std::map<std::string, NodeId> ids;
  std::uint64_t generation = 0;  // the node generation it was built from
};
// `levels`: the controller's topology levels, outermost first; each node's domains come from
// its registered topology (a level it did not give: domain "none").
CycleCluster BuildCycleCluster(const ControllerState& state,
                               const std::vector<std::string>& levels = {});
// Adds the registered nodes (in name order) to `cluster` with their topology; `out`, when
// given, receives the names and ids.
void AddRegisteredNodes(const ControllerState& state, const std::vector<std::string>& levels,
                        Cluster& cluster, CycleCluster* out = nullptr);

// What a new cluster keeps of the one before it (a node generation later): the same GPU model
// list, so the resolved workloads hold; and every earlier node there with its shape and
// domains, only more added, so a job that fitted still fits. Registering nodes one by one
// changes the generation at each; this keeps each change from costing every job again.
struct ClusterChange {
  std::uint64_t from_generation = 0;
  bool same_models = false;
  bool only_added = false;
};
ClusterChange CompareClusters(const CycleCluster& before, const CycleCluster& after);

// Gives every job the scheduler may see its unit workloads with GPU models resolved against
// `cluster`, and, once per node generation, the reason it can never fit (none without nodes).
// Touches only JobState's scheduling fields (not durable).
// With `only`, just those jobs (ids may repeat or be gone), when the cluster is unchanged.
// With `change` (from the cluster the jobs were refreshed for), what it keeps is kept: no
// job is resolved again, and only jobs that could not fit are judged again. Returns the jobs
// whose never-fits reason changed.
std::vector<std::int64_t> RefreshSchedulingWorkloads(
    ControllerState& state, const CycleCluster& cluster,
    const std::vector<std::int64_t>* only = nullptr, const ClusterChange* change = nullptr);

// Whether the scheduler sees `job` at all: active, not held, its dependencies met, with a
// unit pending or running.
bool Schedulable(const JobState& job);

// A unit by (job id, unit index), and the placement of each with live tasks, rank i at i.
using UnitKey = std::pair<std::int64_t, int>;
using UnitPlacements = std::map<UnitKey, Placement>;

// A unit as the snapshot saw it; the decision applier checks it has not changed since.
struct SnapshotUnit {
  std::int64_t job_id = 0;
  int unit = 0;
  int attempt = 0;
  UnitPhase phase = UnitPhase::kPending;
};

// A pending unit's view as a snapshot shows it, with what the decision applier needs of it.
struct PendingUnitView {
  JobView view;
  SnapshotUnit unit;
  std::shared_ptr<const Workload> workload;  // what view.job points at
};

// The views of job `id`'s pending units that a snapshot shows (none for a job it does not
// see): within its free parallelism and replica slots, not resizing, not never-fitting.
// REQUIRES: RefreshSchedulingWorkloads for the job since it last changed.
std::vector<PendingUnitView> PendingViewsOf(const ControllerState& state, std::int64_t id,
                                            const JobState& job, Tick now);

struct CycleSnapshot {
  CycleCluster cluster;
  std::unique_ptr<ClusterState> working;  // over *cluster.cluster
  Snapshot snap;
  std::vector<std::shared_ptr<const Workload>> workloads;  // what snap.jobs point at
  std::vector<SnapshotUnit> units;                         // parallel to snap.jobs
  std::vector<std::string> problems;  // live tasks that did not fit the rebuilt state
  // The long-lived queue whose pending views are snap.pending_in_order (the cycle's, see
  // pending_queue.h); null when every view is in snap.jobs. Not changed until the cycle ends.
  const PendingQueue* queue = nullptr;

  // The index in snap.jobs of the view whose workload has scheduling id `id`.
  std::optional<std::size_t> IndexOf(JobId id) const;
  // The unit and view with scheduling id `id`, in snap.jobs or the queue; null if neither.
  const SnapshotUnit* UnitOf(JobId id) const;
  const JobView* ViewOf(JobId id) const;

 private:
  friend CycleSnapshot BuildCycleSnapshot(const ControllerState&, const CycleCluster&, Tick,
                                          std::uint64_t, std::shared_ptr<std::uint64_t>, Tick,
                                          const PendingQueue*, const LiveTaskIndex*, bool);
  std::unordered_map<std::uint32_t, std::size_t> index_;
};

// The snapshot of `state` at `now`; `seed` is the cycle's. `versions` is the node-version
// source shared by every working state the caller's Scheduler sees (core/cluster_state.h).
// With `usage_window_ms` > 0, each running unit's JobView::used_gpu_milli is the highest use
// its tasks reported over that window (co-location's oversell credit, gpu_usage_feed.h).
// With `queue` (up to date for `state`, pending_queue.h), the pending units of the jobs it
// holds are its views, handed as snap.pending_in_order, and only the running units and the
// jobs it leaves out are looked at: a cycle costs what runs, not what waits. With `live` (up
// to date for `state`, live_task_index.h), the working state is a copy of its state and the
// running units' placements are its own, instead of every live task taken afresh. With a
// queue and `every_running` false, only the running units of elastic jobs get views (and no
// placement is `releasing`): what a scheduler that reads no other running job needs
// (ReadsEveryRunningJob), so that a cycle does not cost what runs either.
// REQUIRES: RefreshSchedulingWorkloads(state, cluster) since the state last changed.
CycleSnapshot BuildCycleSnapshot(const ControllerState& state, const CycleCluster& cluster,
                                 Tick now, std::uint64_t seed,
                                 std::shared_ptr<std::uint64_t> versions, Tick usage_window_ms = 0,
                                 const PendingQueue* queue = nullptr,
                                 const LiveTaskIndex* live = nullptr, bool every_running = true);

// Whether the scheduler of `config` reads every running job in Schedule: preemptive and
// backfilling queue policies (their order and reservations), priority preemption (victims),
// fair share and co-location. Otherwise (fifo) it reads the elastic ones only, to shrink or
// grow them (sched/scheduler.cpp, ScheduleInOrder).
bool ReadsEveryRunningJob(const Scheduler& scheduler, const SchedulerConfig& config);

}  // namespace tessera
