// decisions = Schedule(snapshot, working state): the one scheduling cycle that the simulator
// (virtual clock) and the controller (wall clock) both run. Pure and deterministic: no clock,
// thread, I/O or unseeded randomness; jobs are ordered by policy key, then submit time, then id.
//
// The cycle: order jobs by the queue policy; for a preemptive policy, find which jobs the
// order admits and preempt running jobs it does not; place pending jobs gang by gang with the
// placement policy; for a backfilling policy, reserve for the blocked head job and start later
// jobs only where they cannot delay it. Jobs of several tasks are placed inside one topology
// domain by the topology gang placer (topology_gang_placer.h) unless the config asks for the
// "greedy" baseline. With co-location enabled, a co-location step runs around the in-order
// cycle (sched/colocation/colocation_pass.h).
#pragma once

#include <memory>
#include <set>
#include <string>

#include "core/cluster_state.h"
#include "sched/backfill/backfill_gate.h"
#include "core/colocation_config.h"
#include "sched/decision.h"
#include "sched/placement/placement_policy.h"
#include "sched/placement/task_placer.h"
#include "sched/preemption/victim_search.h"
#include "sched/queue/queue_policy.h"
#include "sched/quota/queue_tree.h"
#include "sched/snapshot.h"

namespace tessera {

struct SchedulerConfig {
  std::string queue_policy = "fifo";  // fifo | backfill | srtf | srsf | las | drf | drf-naive
  std::string placement_policy = "bestfit";  // see PlacementPolicyNames()
  // How jobs of several tasks are placed: "topology" (default) inside the tightest domain
  // allowed by their require/prefer levels, ranks domain by domain; "greedy" task by task on
  // the best node for the placement policy, ignoring topology (the baseline of schedulers
  // without topology awareness).
  std::string gang_placement = "topology";
  // Memoise placement scores per (node version, task shape). Off: the same decisions, slower;
  // kept as the benchmarks' baseline.
  bool memoize_scores = true;
  // Place single tasks through the index of nodes by class (core/node_class_index.h): one
  // score per distinct node state, so a placement costs what the distinct states cost, not
  // what the nodes do. Off: the plain scan over every node (the same decisions; the benchmarks'
  // baseline). Needs memoize_scores; policies that do not score from state always scan.
  bool placement_index = true;
  // fifo and backfill only: a head job that does not fit preempts running jobs of strictly
  // lower priority that are preemptible (sched/preemption/priority_preemption.h). Off by
  // default; the preemptive queue policies (srtf, srsf, las) re-plan by their own order.
  bool priority_preemption = false;
  // What a blocked head job reserves when the queue policy backfills: "domain" (default)
  // concrete GPUs in one domain of its required level at the earliest expected instant;
  // "gpu-count" the cluster-wide GPU count of EASY backfilling (the baseline; also what
  // "greedy" gang placement gets, having no domains to reserve). See
  // sched/backfill/backfill_gate.h and docs/backfill.md.
  std::string backfill_reservation = "domain";
  // Jobs that name a relative speed per GPU model: "fastest" tries their fastest accepted
  // model first (heterogeneity-aware, after Gavel, OSDI'20); "blind" treats all accepted
  // models as one pool (the baseline). See docs/heterogeneous.md.
  std::string gpu_model_choice = "fastest";
  // Resize elastic jobs (Workload::min_workers..max_workers): start them smaller when their
  // nominal size does not fit, grow them into idle GPUs, shrink them instead of preempting
  // them. Off: they are placed at their nominal size like any gang. The controller does not
  // resize jobs yet, so it leaves this off. See docs/elastic.md.
  bool elastic = false;
  QueuePolicyConfig queue;
  PlacementConfig placement;
  // The queue tree (hierarchical quotas): required by drf and drf-naive, which schedule with
  // ScheduleFairShare (sched/quota/fair_share_cycle.h) instead of the cycles below.
  std::shared_ptr<const QueueTree> queues;
  // Online/offline co-location (sched/colocation/, docs/colocation.md); off unless enabled.
  // Needs a queue policy that does not preempt (fifo, backfill).
  ColocationConfig colocation;
};

class ColocationCycle;

class Scheduler {
 public:
  static Result<Scheduler> Create(const SchedulerConfig& config);

  // Decides for `snap`. `working` is the caller's copy of the cluster state with every running
  // job's placement applied; on return it reflects the decisions (binds taken, preemptions
  // given back). The memo of placement scores is reused across calls on one state lineage.
  Decisions Schedule(const Snapshot& snap, ClusterState& working) const;

  // The earliest instant after snap.now at which the order of the running jobs may change
  // without any arrival or completion (e.g. a LAS threshold crossing, or under drf a running
  // job reaching the reclaim grace), or kNever.
  Tick NextReorderTime(const Snapshot& snap) const;

  const QueuePolicy& queue_policy() const { return *queue_; }
  const PlacementPolicy& placement_policy() const { return *placement_; }

 private:
  Scheduler() = default;
  class JobOrder;
  void ScheduleInOrder(const Snapshot& snap, JobOrder& order, ClusterState& working, Rng& rng,
                       const TopologyGangPlacer* gangs, Decisions& out,
                       const ColocationCycle* colocation) const;
  // Priority preemption for blocked head `job`: preempts victims and binds the job; returns
  // true when it was bound.
  bool PreemptForPriority(const Snapshot& snap, const Workload& job, ClusterState& working,
                          const TaskPlacer& placer, Rng& rng, std::set<JobId>& preempted,
                          Decisions& out) const;
  void ScheduleWithPreemption(const Snapshot& snap, JobOrder& order, ClusterState& working,
                              Rng& rng, const TopologyGangPlacer* gangs, Decisions& out) const;

  BackfillReservation backfill_reservation_ = BackfillReservation::kDomain;
  bool fastest_model_first_ = true;
  bool elastic_ = false;
  std::shared_ptr<const QueuePolicy> queue_;
  std::shared_ptr<const PlacementPolicy> placement_;
  // Fair share (drf, drf-naive): the tree and how victims are chosen; null otherwise.
  std::shared_ptr<const QueueTree> queues_;
  VictimOrder victims_ = VictimOrder::kCheckpointAware;
  std::shared_ptr<const ColocationConfig> colocation_;  // null = no co-location step
  std::shared_ptr<ScoreCache> cache_;                   // memo only; does not change any decision
  bool priority_preemption_ = false;
  // The topology tree of the cluster last scheduled (built once, rebuilt if the cluster
  // changes); null for "greedy" gang placement.
  struct TopologyMemo;
  std::shared_ptr<TopologyMemo> topology_;
};

}  // namespace tessera
