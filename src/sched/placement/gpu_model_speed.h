// Heterogeneity-aware placement (after Gavel, Narayanan et al., OSDI'20): a job may run on
// several GPU models at a different relative speed on each (Workload::gpu_model_speeds). The
// scheduler tries the job's models from the fastest down, one model at a time, and only then
// any mix of them; a gang is as fast as its slowest GPU. Jobs ahead of it in the queue have
// already been placed or hold a reservation, so the fastest model it gets is one whose GPUs
// nobody ahead of it needs now. See docs/heterogeneous.md.
#pragma once

#include <vector>

#include "core/cluster.h"
#include "core/placement.h"
#include "core/workload.h"

namespace tessera {

// The models of `cluster` that `job` accepts, fastest first (ties by model id), when the job
// names speeds that differ; empty otherwise (one try with all accepted models is enough).
std::vector<GpuModelId> ModelsFastestFirst(const Cluster& cluster, const Workload& job);

// The speed of `placement`: the least speed over the GPU models of its tasks that use GPUs
// (1.0 when it uses none or the job names no speeds).
double PlacementSpeed(const Cluster& cluster, const Workload& job, const Placement& placement);

// The least speed over the models `job` accepts in `cluster` (1.0 when it names none): a
// run-time estimate divided by it holds on any placement.
double SlowestSpeed(const Cluster& cluster, const Workload& job);

}  // namespace tessera
