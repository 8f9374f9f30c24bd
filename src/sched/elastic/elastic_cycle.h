// The elastic steps of one scheduling cycle (elastic_resize.h has the mechanism): start a
// pending elastic job at its minimum when its nominal size does not fit, shrink running
// elastic jobs to let a blocked head start, keep a displaced elastic job at a smaller size
// instead of preempting it, and grow elastic jobs into what is left idle at the end. It keeps
// the placements it changed this cycle, so that each step sees the previous ones.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "core/cluster_state.h"
#include "core/rng.h"
#include "sched/backfill/backfill_gate.h"
#include "sched/decision.h"
#include "sched/elastic/elastic_resize.h"
#include "sched/placement/task_placer.h"
#include "sched/snapshot.h"

namespace tessera {

class ElasticCycle {
 public:
  ElasticCycle(const Snapshot& snap, const TaskPlacer& placer);

  // A pending elastic job that did not fit at its nominal size: its placement at its minimum.
  std::optional<Placement> PlaceAtMinimum(ClusterState& state, const Workload& job, Rng& rng) const;

  // Shrinks running elastic jobs whose priority is not above `head`'s — lowest priority first,
  // then the latest started — each to its minimum, until `head` fits, and returns the head's
  // placement (the shrinks recorded in `out` as kResize). Changes nothing when even shrinking
  // all of them does not make room.
  std::optional<Placement> ShrinkFor(ClusterState& state, const Workload& head, Rng& rng,
                                     Decisions& out);
  // The same over the running elastic jobs `may_shrink` names (fair share: the jobs reclaim
  // or preemption may take from), whatever their priority.
  std::optional<Placement> ShrinkFor(ClusterState& state, const Workload& head, Rng& rng,
                                     Decisions& out,
                                     const std::function<bool(const JobView&)>& may_shrink);

  // A running elastic job whose placement no longer fits (the queue order gave its GPUs to
  // others): keeps the longest prefix of its ranks of at least its minimum, recorded as
  // kResize. False when not even the minimum fits (the caller preempts it).
  bool KeepShrunk(ClusterState& state, const JobView& running, Decisions& out);

  // Preemptive re-plans release every running job and apply back those the order admits. An
  // elastic job grown beyond its nominal size is applied back at its nominal size first (the
  // order admitted that much), and its lent workers only after the order's jobs are placed
  // (ReturnLent). False when not even the nominal size fits.
  bool ApplyUpToNominal(ClusterState& state, const JobView& running);
  void ReturnLent(ClusterState& state, Decisions& out);

  // Where running job `v` is now: its snapshot placement, or its resize this cycle.
  const Placement& Current(const JobView& v, const Decisions& out) const;

  // A job bound this cycle (decision out[index]); it may grow at the end.
  void NoteBound(const Workload& job, std::size_t index) { bound_.push_back({&job, index}); }

  // What a job may grow to beyond its placement: fair share keeps its queue within its limit.
  class GrowthLimit {
   public:
    virtual ~GrowthLimit() = default;
    // The most workers `job` (now at `current`) may have; at least `current`.
    virtual int MaxWorkers(const Workload& job, int current) const = 0;
    // It grew from `from` to `to` workers.
    virtual void Grew(const Workload& job, int from, int to) = 0;
  };

  // Grows running and newly bound elastic jobs — highest priority first, then earliest
  // submitted — into idle GPUs, never onto a node `gate` reserves (when given), nor beyond what
  // `limit` allows (when given). Each job's draws come from its own stream
  // (TaskPlacer::DrawsFor), not from `cycle`.
  void Grow(ClusterState& state, BackfillGate* gate, Rng& cycle, Decisions& out,
            GrowthLimit* limit = nullptr);

 private:
  void Record(const JobView& v, Placement p, Decisions& out);

  const Snapshot& snap_;
  const TaskPlacer& placer_;
  std::vector<const JobView*> running_;           // elastic running jobs
  std::map<std::uint32_t, std::size_t> resized_;  // job id → its kResize in out
  std::vector<std::pair<const Workload*, std::size_t>> bound_;
  std::vector<const JobView*> lent_;  // applied at nominal size, workers beyond it pending
};

}  // namespace tessera
