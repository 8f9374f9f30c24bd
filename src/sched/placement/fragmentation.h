// GPU fragmentation as defined by FGD (Weng et al., "Beware of Fragmentation: Scheduling
// GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC'23, §3): the free GPU
// capacity of a node that the expected workload cannot use, weighted by how often each task
// shape occurs. Used by the FGD placement policy and by the simulator's fragmentation figure.
#pragma once

#include <cstdint>
#include <vector>

#include "core/cluster.h"
#include "core/cluster_state.h"
#include "core/gpu_model.h"
#include "core/workload.h"

namespace tessera {

// One shape of the target workload M with its popularity p_m.
struct WorkloadShape {
  TaskShape shape;
  GpuModelSet models = GpuModelSet::Any();
  std::int64_t count = 0;  // occurrences; p_m = count / TargetWorkload::total
};

struct TargetWorkload {
  std::vector<WorkloadShape> shapes;  // most frequent first
  std::int64_t total = 0;             // all tasks the shapes were counted from

  // Shapes of `tasks` (with their accepted models), most frequent first, kept until they
  // cover `coverage` of all tasks (FGD keeps 95%). Ties in frequency are broken by the shape's
  // fields, larger first as in the FGD authors' simulator, so that the result does not depend
  // on input order.
  static TargetWorkload FromTasks(const std::vector<WorkloadShape>& tasks, double coverage);
};

// F_n(m) in milli-GPU for a node of `node` with free state `s`.
std::int64_t NodeFragmentForShape(const Node& node, const NodeState& s, const WorkloadShape& m);

// F_n = Σ_m p_m · F_n(m), in milli-GPU scaled by TargetWorkload::total (kept integral so that
// comparisons are exact): divide by `total` for milli-GPU.
std::int64_t ScaledNodeFragment(const Node& node, const NodeState& s, const TargetWorkload& w);

// Cluster fragmentation ratio: Σ_n F_n ÷ all free GPU milli on healthy nodes (0 when none free).
double FragmentationRatio(const ClusterState& state, const TargetWorkload& w);

}  // namespace tessera
