// Turns trace jobs into scheduler workloads for a given cluster. A job of G GPUs becomes one
// worker of G GPUs when G fits on one node; a larger job becomes a gang of whole-node workers
// plus one worker for the remainder (the "yarn" placement of Muri's and Tiresias' simulators).
#pragma once

#include <vector>

#include "core/cluster.h"
#include "core/workload.h"
#include "sim/trace/trace_job.h"

namespace tessera {

// The largest GPU count of any node (at least 1).
int MaxGpusPerNode(const Cluster& cluster);

Workload ToWorkload(const TraceJob& t, const Cluster& cluster, JobId id);
// Every job of a trace, job i with JobId(i) (what RunReplay requires).
std::vector<Workload> ToWorkloads(const std::vector<TraceJob>& trace, const Cluster& cluster);

}  // namespace tessera
