#include "sched/placement/task_placer.h"

#include <bit>

#include "sched/placement/gpu_model_speed.h"
#include "sched/placement/role_affinity.h"
#include "sched/placement/tie_walk.h"
#include "sched/placement/topology_gang_placer.h"

namespace tessera {

int ScoreCache::ShapeId(const TaskShape& shape, GpuModelSet models) {
  auto key = std::make_tuple(shape.cpu_milli, shape.memory_mib, shape.gpus, shape.gpu_milli,
                             shape.gpus > 0 ? models.bits() : 0);
  auto [it, inserted] = shape_ids_.try_emplace(key, static_cast<int>(shape_ids_.size()));
  return it->second;
}

const ScoreCache::Entry* ScoreCache::Find(NodeId node, int shape, std::uint64_t version) const {
  const auto s = static_cast<std::size_t>(shape);
  if (s >= entries_.size() || node.value >= entries_[s].size()) return nullptr;
  const auto& e = entries_[s][node.value];
  return e.version_plus_one == version + 1 ? &e : nullptr;
}

void ScoreCache::Store(NodeId node, int shape, std::uint64_t version, bool fits, NodeScore score) {
  const auto s = static_cast<std::size_t>(shape);
  if (s >= entries_.size()) entries_.resize(s + 1);
  auto& row = entries_[s];
  if (node.value >= row.size()) row.resize(node.value + 1);
  row[node.value] = Entry{version + 1, fits, score};
}

ScoreCache::Entry* ScoreCache::Row(int shape, std::size_t nodes) {
  const auto s = static_cast<std::size_t>(shape);
  if (s >= entries_.size()) entries_.resize(s + 1);
  if (entries_[s].size() < nodes) entries_[s].resize(nodes);
  return entries_[s].data();
}

bool TaskFitsNode(const Node& node, const NodeState& s, const TaskShape& shape,
                  GpuModelSet models) {
  if (!s.healthy) return false;
  if (s.free.cpu_milli < shape.cpu_milli || s.free.memory_mib < shape.memory_mib) return false;
  if (shape.gpus == 0) return true;
  if (!models.Contains(node.gpu_model)) return false;
  if (s.free.gpu_milli < shape.gpus * std::int64_t{shape.gpu_milli}) return false;
  int usable = 0;
  for (int g = 0; g < node.gpu_count; ++g) usable += s.gpu_free[g] >= shape.gpu_milli;
  return usable >= shape.gpus;
}

std::optional<TaskPlacement> TaskPlacer::Place(const ClusterState& state, const TaskShape& shape,
                                               GpuModelSet models, Rng& rng,
                                               const std::vector<NodeId>* candidates) const {
  if (candidates == nullptr) {
    if (const NodeClassIndex* index = ClassIndexFor(state)) {
      return PlaceByClass(state, *index, shape, models, rng);
    }
  }
  const bool memo = cache_ != nullptr && policy_.deterministic();
  const int shape_id = memo ? cache_->ShapeId(shape, models) : -1;
  const auto& cluster = state.cluster();
  // Best score so far and every node that reaches it; one draw at the end breaks the tie.
  NodeScore best_score;
  std::vector<NodeId>& tied = tied_;
  tied.clear();

  // The memo row of this shape, probed in place: one scan reads each node's version and
  // entry and nothing else unless the node changed.
  ScoreCache::Entry* const row =
      memo ? cache_->Row(shape_id, static_cast<std::size_t>(state.node_count())) : nullptr;
  auto consider = [&](NodeId id) {
    const auto& s = state.node(id);
    NodeScore score;
    if (row != nullptr && row[id.value].version_plus_one == s.version + 1) {
      const ScoreCache::Entry& hit = row[id.value];
      if (!hit.fits) return;
      score = hit.score;
    } else {
      bool fits = TaskFitsNode(cluster.node(id), s, shape, models);
      if (fits) {
        score = policy_.Score(state, id, shape, rng);
        fits = shape.gpus == 0 || std::popcount(score.gpu_mask) == shape.gpus;  // GPUs found
      }
      if (row != nullptr) row[id.value] = ScoreCache::Entry{s.version + 1, fits, score};
      if (!fits) return;
    }
    if (tied.empty() || score.score > best_score.score) {
      best_score = score;
      tied.clear();
      tied.push_back(id);
    } else if (score.score == best_score.score) {
      tied.push_back(id);
    }
  };
  if (candidates != nullptr) {
    for (NodeId id : *candidates) consider(id);
  } else {
    const auto n = static_cast<std::uint32_t>(state.node_count());
    for (std::uint32_t i = 0; i < n; ++i) consider(NodeId(i));
  }
  if (tied.empty()) return std::nullopt;
  NodeId best = tied[0];
  if (tied.size() > 1 && policy_.tie_break() == TieBreak::kSeededDraw) {
    const TieWalk walk(rng, static_cast<std::uint32_t>(state.node_count()));
    for (NodeId id : tied) {
      if (walk.PositionOf(id) < walk.PositionOf(best)) best = id;
    }
  } else if (tied.size() > 1) {
    const auto& rank = policy_.node_rank();
    auto before = [&](NodeId a, NodeId b) {
      if (a.value < rank.size() && b.value < rank.size()) return rank[a.value] < rank[b.value];
      return cluster.node(a).name < cluster.node(b).name;
    };
    for (NodeId id : tied) {
      if (before(id, best)) best = id;
    }
  }
  if (best != tied[0]) best_score = policy_.Score(state, best, shape, rng);  // its own GPUs
  return PlaceOn(state, best, shape, best_score, rng);
}

TaskPlacement TaskPlacer::PlaceOn(const ClusterState& state, NodeId node, const TaskShape& shape,
                                  NodeScore score, Rng& rng) const {
  return TaskPlacement{node, policy_.FinalGpus(state, node, shape, score, rng),
                       shape.gpus > 0 ? shape.gpu_milli : 0, shape.cpu_milli, shape.memory_mib};
}

Rng TaskPlacer::DrawsFor(const Workload& job) const {
  const std::uint64_t key =
      job.name.empty() ? Rng::Mix(0x6a6f62 /* "job" */, job.id.value) : Rng::HashText(job.name);
  return Rng(Rng::Mix(policy_.draw_seed(), key));
}

std::optional<Placement> TaskPlacer::PlaceGang(ClusterState& state, const Workload& job,
                                               Rng& /*cycle*/) const {
  Rng rng = DrawsFor(job);
  // The greedy baseline ignores topology, role affinity included.
  if (gangs_ == nullptr || !HasRoleAffinity(job)) return PlaceGangOnModels(state, job, rng);
  const Cluster& cluster = state.cluster();
  auto p = PlaceGangOnModels(state, job, rng);
  if (p && RoleAffinityHolds(cluster, job, *p)) return p;
  if (p) state.Release(*p);
  // Again, with every task inside one domain of the tightest affinity level.
  const std::string level = TightestAffinityLevel(cluster, job);
  if (level.empty()) return std::nullopt;
  const Topology& topology = cluster.topology();
  Workload tight = job;
  const int l = *LevelNumber(topology, level);
  auto wider = [&](const std::string& name) {
    return name.empty() || LevelNumber(topology, name).value_or(kClusterLevel) < l;
  };
  if (wider(tight.topology.require)) tight.topology.require = level;
  if (wider(tight.topology.prefer)) tight.topology.prefer = level;
  auto q = PlaceGangOnModels(state, tight, rng);
  if (q && RoleAffinityHolds(cluster, job, *q)) return q;
  if (q) state.Release(*q);
  return std::nullopt;
}

std::optional<Placement> TaskPlacer::PlaceGangOnModels(ClusterState& state, const Workload& job,
                                                       Rng& rng) const {
  if (fastest_model_first_ && !job.model_speed.empty()) {
    const auto models = ModelsFastestFirst(state.cluster(), job);
    if (!models.empty()) {
      if (job.TotalGpuMilli() > state.free_gpu_milli()) return std::nullopt;
      Workload on_one = job;
      for (GpuModelId m : models) {
        on_one.allowed_models = GpuModelSet::None();
        on_one.allowed_models.Add(m);
        if (auto p = PlaceGangOnce(state, on_one, rng)) return p;
      }
    }
  }
  return PlaceGangOnce(state, job, rng);
}

std::optional<Placement> TaskPlacer::PlaceGangOnce(ClusterState& state, const Workload& job,
                                                   Rng& rng) const {
  if (job.TotalGpuMilli() > state.free_gpu_milli()) return std::nullopt;  // cannot fit anyway
  const bool constrained = !job.topology.require.empty() || !job.topology.prefer.empty();
  // A gang goes to the topology placer when it names a level, or when the cluster has a level
  // with several domains. On a flat or single-switch cluster every placement is equally local,
  // so the policy's own task-by-task choice stands (and earlier results are unchanged).
  if (gangs_ != nullptr && job.TaskCount() > 1 && (constrained || gangs_->tree().multi_domain())) {
    return gangs_->Place(state, job, rng);
  }
  if (gangs_ != nullptr && constrained) {
    // One task satisfies any level at or above a node; only a level that does not exist stops it.
    const Topology& topology = state.cluster().topology();
    if ((!job.topology.require.empty() && !LevelNumber(topology, job.topology.require)) ||
        (!job.topology.prefer.empty() && !LevelNumber(topology, job.topology.prefer))) {
      return std::nullopt;
    }
  }
  Placement placement;
  placement.reserve(static_cast<std::size_t>(job.TaskCount()));
  for (const auto& group : job.groups) {
    for (int i = 0; i < group.count; ++i) {
      auto task = Place(state, group.shape, job.allowed_models, rng);
      if (!task || !state.Apply({*task})) {
        state.Release(placement);
        return std::nullopt;
      }
      placement.push_back(*task);
    }
  }
  return placement;
}

std::optional<std::string> NeverFitsReason(const Cluster& cluster, const Workload& job) {
  if (job.groups.empty() || job.TaskCount() == 0) return "the job has no tasks";
  ClusterState empty(cluster);
  for (const auto& group : job.groups) {
    bool any = false;
    for (const auto& n : cluster.nodes()) {
      if (TaskFitsNode(n, empty.node(n.id), group.shape, job.allowed_models)) {
        any = true;
        break;
      }
    }
    if (!any) {
      return "no node can hold one " + group.name + " (" + std::to_string(group.shape.gpus) +
             " GPU x " + std::to_string(group.shape.gpu_milli) + " milli, " +
             std::to_string(group.shape.cpu_milli) + " mCPU, " +
             std::to_string(group.shape.memory_mib) + " MiB, accepted GPU models)";
    }
  }
  if (job.TotalGpuMilli() > cluster.total_gpus() * kMilliPerGpu) {
    return "the job needs " + std::to_string(job.TotalGpuMilli() / kMilliPerGpu) +
           " GPUs and the cluster has " + std::to_string(cluster.total_gpus());
  }
  if (auto why = TopologyNeverFitsReason(cluster, job)) return why;
  return RoleAffinityNeverFitsReason(cluster, job);
}

}  // namespace tessera
