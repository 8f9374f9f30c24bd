#include "sim/workload_builder.h"

#include <algorithm>

namespace tessera {

int MaxGpusPerNode(const Cluster& cluster) {
  int g = 1;
  for (const auto& n : cluster.nodes()) g = std::max(g, n.gpu_count);
  return g;
}

Workload ToWorkload(const TraceJob& t, const Cluster& cluster, JobId id) {
  Workload w;
  w.id = id;
  w.name = t.id;
  w.kind = WorkloadKind::kTraining;
  w.user = t.user;
  // A Slurm site's shares are per account; other traces have users only.
  w.queue = !t.account.empty() ? t.account : t.user.empty() ? "default" : t.user;
  w.submit = t.submit;
  w.duration = t.duration;
  w.gpu_models = t.gpu_models;
  ResolveGpuModels(cluster.models(), w);
  w.topology = TopologyConstraint{t.require, t.prefer};
  const int per_node = MaxGpusPerNode(cluster);
  const int whole = t.gpu_milli >= kMilliPerGpu ? t.gpus : 0;
  if (whole > per_node) {
    // Whole-node workers plus a remainder worker; CPU and memory split by GPU count.
    const int full = whole / per_node;
    const int rest = whole % per_node;
    auto shape_for = [&](int gpus) {
      return TaskShape{t.cpu_milli * gpus / whole, t.memory_mib * gpus / whole, gpus, kMilliPerGpu};
    };
    w.groups.push_back({"worker", full, shape_for(per_node)});
    if (rest > 0) w.groups.push_back({"worker", 1, shape_for(rest)});
    // An elastic range (generic CSV) applies to a gang of whole nodes only; a range that does
    // not contain its size is left out, and the job keeps its size.
    if (rest == 0 && t.min_workers > 0 && t.min_workers <= full && full <= t.max_workers) {
      w.min_workers = t.min_workers;
      w.max_workers = t.max_workers;
    }
  } else {
    w.groups.push_back(
        {"worker", 1, TaskShape{t.cpu_milli, t.memory_mib, t.gpus, t.gpus > 0 ? t.gpu_milli : 0}});
  }
  return w;
}

std::vector<Workload> ToWorkloads(const std::vector<TraceJob>& trace, const Cluster& cluster) {
  std::vector<Workload> jobs;
  jobs.reserve(trace.size());
  for (std::size_t i = 0; i < trace.size(); ++i) {
    jobs.push_back(ToWorkload(trace[i], cluster, JobId(static_cast<std::uint32_t>(i))));
  }
  return jobs;
}

}  // namespace tessera
