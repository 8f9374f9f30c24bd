#include "sched/elastic/elastic_resize.h"

#include <algorithm>

#include "sched/placement/topology_gang_placer.h"

namespace tessera {

bool IsElastic(const Workload& job) {
  return job.groups.size() == 1 && job.min_workers > 0 && job.max_workers >= job.min_workers;
}

int MinWorkers(const Workload& job) { return std::min(job.min_workers, job.groups[0].count); }

int MaxWorkers(const Workload& job) { return std::max(job.max_workers, job.groups[0].count); }

Workload WithWorkers(const Workload& job, int workers) {
  Workload w = job;
  w.groups[0].count = workers;
  return w;
}

std::optional<Placement> GrowElastic(ClusterState& state, const Workload& job,
                                     const Placement& current, const TaskPlacer& placer,
                                     int max_workers) {
  const int max = max_workers > 0 ? std::min(max_workers, MaxWorkers(job)) : MaxWorkers(job);
  if (current.empty() || static_cast<int>(current.size()) >= max) return std::nullopt;
  const Cluster& cluster = state.cluster();
  // Candidates: the nodes of one domain around the job, so that growing does not spread it:
  // its preferred level when it spans no wider than that, else the level it spans now; a job
  // on one node with no preference grows inside its innermost named level (leaf).
  const int named = static_cast<int>(cluster.topology().levels.size());
  int level = SpanLevel(cluster, current);
  if (!job.topology.prefer.empty()) {
    if (auto p = LevelNumber(cluster.topology(), job.topology.prefer);
        p && *p <= named && level >= *p) {
      level = *p;
    }
  }
  if (level >= named) level = named - 1;  // kClusterLevel when there are no named levels
  // A domain too small for the job at its maximum would keep it small for good (a 4,096-GPU
  // job that prefers a 2,048-GPU spine and started at half size): widen it, one level at a
  // time, never wider than the job requires.
  int require = kClusterLevel;
  if (!job.topology.require.empty()) {
    require = LevelNumber(cluster.topology(), job.topology.require).value_or(kClusterLevel);
  }
  const TaskShape& shape = job.groups[0].shape;
  const std::int64_t need = std::int64_t{max} * shape.gpus;
  const Node& anchor = cluster.node(current[0].node);
  std::vector<NodeId> candidates;
  while (true) {
    candidates.clear();
    std::int64_t gpus = 0;
    for (const Node& n : cluster.nodes()) {
      const auto l = static_cast<std::size_t>(level);
      if (level == kClusterLevel ||
          (n.domain.size() > l && anchor.domain.size() > l && n.domain[l] == anchor.domain[l])) {
        candidates.push_back(n.id);
        gpus += n.gpu_count;
      }
    }
    if (gpus >= need || level <= std::max(require, kClusterLevel)) break;
    --level;
  }
  Placement grown = current;
  Rng rng = placer.DrawsFor(job);
  while (static_cast<int>(grown.size()) < max) {
    auto task = placer.Place(state, shape, job.allowed_models, rng, &candidates);
    if (!task || !state.Apply({*task})) break;
    grown.push_back(*task);
  }
  if (grown.size() == current.size()) return std::nullopt;
  return grown;
}

Placement ShrinkElastic(ClusterState& state, const Placement& current, int workers) {
  const auto keep = static_cast<std::size_t>(std::max(0, workers));
  if (keep >= current.size()) return current;
  Placement dropped(current.begin() + static_cast<long>(keep), current.end());
  state.Release(dropped);
  return Placement(current.begin(), current.begin() + static_cast<long>(keep));
}

std::optional<Placement> ApplyLongestPrefix(ClusterState& state, const Placement& p, int min) {
  Placement kept;
  for (const auto& t : p) {
    if (!state.Apply({t})) break;
    kept.push_back(t);
  }
  if (static_cast<int>(kept.size()) < min || kept.empty()) {
    state.Release(kept);
    return std::nullopt;
  }
  return kept;
}

}  // namespace tessera
