// Which running jobs to evict so that one pending job can start (priority preemption and
// quota reclaim alike). The victim set
//   (a) frees a placement the preemptor's gang can really use: every candidate set is tried by
//       placing the gang on the cluster with the set released, through the same TaskPlacer
//       (and so the same topology constraints) as a normal start;
//   (b) is minimal: each victim is tried back in, and kept running when the gang still fits;
//   (c) under kCheckpointAware, costs the least GPU-time lost, Σ GPUs × (now − last
//       checkpoint), over the places (nodes, topology domains, the whole cluster) it could be
//       taken from; under kNaive, victims are taken as Kueue and Volcano order them (lowest
//       priority, then most recently started), the baseline the results compare against.
// BatchJob victims go before any other kind under both orders. Pure and deterministic.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "core/cluster_state.h"
#include "core/rng.h"
#include "core/time.h"
#include "core/workload.h"
#include "sched/placement/task_placer.h"
#include "sched/snapshot.h"

namespace tessera {

enum class VictimOrder { kCheckpointAware, kNaive };

// May `victim` be evicted so that `preemptor` can start? Only preemptible jobs; an
// InferenceService replica only for a higher-priority InferenceService (online work is never
// evicted for offline work). FindVictims drops candidates that fail it.
bool MayEvict(const Workload& victim, const Workload& preemptor);

// GPU-seconds of work `v` loses if it is evicted at `now`: its GPUs × the time since its last
// checkpoint (or since it started, when that is later or no checkpoint is known).
double GpuSecondsLost(const JobView& v, Tick now);

struct VictimSet {
  std::vector<const JobView*> victims;  // in the order chosen
  Placement placement;                  // where the preemptor goes once they are gone
  double gpu_seconds_lost = 0;
};

struct VictimSearchLimits {
  std::size_t max_scopes = 64;        // places tried (checkpoint-aware)
  std::size_t max_placements = 1024;  // gang placements tried, over all places
};

// Finds a victim set among `candidates` (running jobs the caller may evict). On success the
// victims are released in `working` and the preemptor's placement is applied there; on
// failure `working` is as it was.
std::optional<VictimSet> FindVictims(ClusterState& working, const Workload& preemptor,
                                     std::vector<const JobView*> candidates, Tick now,
                                     VictimOrder order, const TaskPlacer& placer, Rng& rng,
                                     const VictimSearchLimits& limits = {});

}  // namespace tessera
