// Online/offline co-location (docs/colocation.md): which workload kinds are online (latency
// bound, never preempted for offline work) and which are offline (soak idle and oversold
// capacity, evicted first), how much of online replicas' unused GPU offline work may borrow,
// and what an eviction costs. A value type (core) so that the file reader (spec/colocation_file.h)
// serves the simulator and the controller alike; the scheduler's step is sched/colocation/.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "core/workload.h"

namespace tessera {

struct ColocationConfig {
  bool enabled = false;
  // Share of online replicas' unused GPU (requested − used, per GPU) that offline tasks may be
  // placed on, in per mille (0 = none, 1000 = all of it). Integer so that the credit of a GPU
  // is exact: floor(oversell_permille × headroom / 1000).
  std::int32_t oversell_permille = 0;
  std::vector<WorkloadKind> online = {WorkloadKind::kInference};
  std::vector<WorkloadKind> offline = {WorkloadKind::kBatch};
  // Run time an evicted offline task pays on top of the progress it loses (restart, reload).
  Tick eviction_cost = 30 * kSecond;
};

enum class CoClass { kOnline, kOffline, kOther };

CoClass ClassOf(const ColocationConfig& config, WorkloadKind kind);

// Fails naming the key ("oversell", "online", "offline", "evictionCostSeconds") and why.
Status ValidateColocationConfig(const ColocationConfig& config);

}  // namespace tessera
