// The co-location step of a scheduling cycle (docs/colocation.md), run by Scheduler::Schedule
// around its regular cycle when the config enables it:
//   1. before: offline tasks on oversold credit that the online load has taken back are evicted
//      (per GPU, cheapest first, minimal set); then pending online jobs are placed, evicting
//      offline tasks where they do not fit (per task, the node whose victims cost least);
//      online work is never evicted here, and offline work never evicts anything;
//   2. the regular cycle places everything else (the pass owns pending online jobs);
//   3. after: pending offline tasks that did not start are placed on the credit of online
//      replicas' unused GPU (oversell), best fit.
// Pure: the cycle's state comes in through the snapshot and the working ClusterState.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/cluster_state.h"
#include "core/colocation_config.h"
#include "core/rng.h"
#include "sched/decision.h"
#include "sched/placement/task_placer.h"
#include "sched/snapshot.h"

namespace tessera {

class ColocationCycle {
 public:
  ColocationCycle(const ColocationConfig& config, const Snapshot& snap, ClusterState& working);

  // True for a job the pass places itself (a pending online job): the regular cycle skips it.
  bool Owns(const JobView& v) const;
  // Places pending online jobs, each drawing from its own stream (TaskPlacer::DrawsFor), not
  // from `cycle`.
  void Before(const TaskPlacer& placer, Rng& cycle, Decisions& out);
  void After(Decisions& out);

 private:
  struct GpuLedger {
    std::int64_t online_requested = 0;
    std::int64_t online_used = 0;
    std::int64_t oversold = 0;  // offline milli placed on this GPU's credit
  };
  using GpuKey = std::pair<std::uint32_t, int>;  // node, GPU index

  std::int64_t Credit(const GpuLedger& g) const;
  std::int64_t Cost(const JobView& v) const;
  void Evict(const JobView* v, const std::string& reason, Decisions& out);
  void ReclaimCredit(Decisions& out);
  std::vector<const JobView*> Pending(CoClass cls) const;
  // Whether `job` does not fit now but will once the gangs being stopped are gone
  // (Snapshot::releasing; live only, the simulator frees at once). When it waits, the part of
  // the place it will take that is free now is reserved in working_ for this cycle.
  bool WaitsForReleased(const TaskPlacer& placer, const Workload& job);
  // The part of `p` free in working_ now (per GPU, CPU and memory).
  Placement FreePartOf(const Placement& p) const;
  // Places one task of an online job, evicting offline tasks on one node if it must; the
  // victims are appended to `victims` (already released in working_).
  std::optional<TaskPlacement> PlaceOnlineTask(const TaskPlacer& placer, Rng& rng,
                                               const Workload& job, const TaskShape& shape,
                                               std::vector<const JobView*>& victims);
  struct SpareCredit {
    std::uint32_t node;
    int gpu;
    std::int64_t spare;  // credit − oversold
  };
  std::optional<Placement> PlaceOnCredit(const Workload& job,
                                         const std::vector<SpareCredit>& spares) const;

  const ColocationConfig& config_;
  const Snapshot& snap_;
  ClusterState& working_;
  std::map<GpuKey, GpuLedger> gpus_;
  // Running offline tasks by node (node id order, then job id), and which are gone.
  std::map<std::uint32_t, std::vector<const JobView*>> offline_on_node_;
  std::set<JobId> evicted_;  // this cycle's victims
};

}  // namespace tessera
