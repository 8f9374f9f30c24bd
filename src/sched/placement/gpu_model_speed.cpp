#include "sched/placement/gpu_model_speed.h"

#include <algorithm>

namespace tessera {

std::vector<GpuModelId> ModelsFastestFirst(const Cluster& cluster, const Workload& job) {
  std::vector<GpuModelId> models;
  if (job.model_speed.empty()) return models;
  const int n = cluster.models().size();
  for (int m = 0; m < n; ++m) {
    const auto id = static_cast<GpuModelId>(m);
    if (job.allowed_models.Contains(id)) models.push_back(id);
  }
  std::stable_sort(models.begin(), models.end(),
                   [&](GpuModelId a, GpuModelId b) { return job.SpeedOn(a) > job.SpeedOn(b); });
  if (models.size() < 2 || job.SpeedOn(models.front()) == job.SpeedOn(models.back())) {
    models.clear();
  }
  return models;
}

double PlacementSpeed(const Cluster& cluster, const Workload& job, const Placement& placement) {
  if (job.model_speed.empty()) return 1.0;
  double speed = 0;
  bool any = false;
  for (const auto& t : placement) {
    if (t.gpu_mask == 0) continue;
    const double s = job.SpeedOn(cluster.node(t.node).gpu_model);
    speed = any ? std::min(speed, s) : s;
    any = true;
  }
  return any ? speed : 1.0;
}

double SlowestSpeed(const Cluster& cluster, const Workload& job) {
  if (job.model_speed.empty()) return 1.0;
  double speed = 0;
  bool any = false;
  const int n = cluster.models().size();
  for (int m = 0; m < n; ++m) {
    const auto id = static_cast<GpuModelId>(m);
    if (!job.allowed_models.Contains(id)) continue;
    speed = any ? std::min(speed, job.SpeedOn(id)) : job.SpeedOn(id);
    any = true;
  }
  return any ? speed : 1.0;
}

}  // namespace tessera
