// Topology-aware gang placement: the tree of domains, the per-call capacity prefix sums, the
// choice of a domain level by level, and the domain-contiguous walk that assigns ranks.
#include "sched/placement/topology_gang_placer.h"

#include <algorithm>
#include <bit>
#include <limits>

#include "sched/placement/task_placer.h"

namespace tessera {

namespace {

constexpr std::uint32_t kNoDomain = UINT32_MAX;
// Bounds the task count of a CPU-only task that asks for no CPU or memory. Not the gang's size:
// the best-fit order needs to see how much room a node has beyond what the gang takes.
constexpr std::int64_t kMaxTasksPerNode = 1 << 16;

std::uint32_t DomainAt(const Node& n, int level) {
  const auto l = static_cast<std::size_t>(level);
  return l < n.domain.size() ? n.domain[l] : kNoDomain;
}

// How many tasks of `shape` fit on the node at once. Exact for whole-GPU tasks and shares of one
// GPU (each GPU holds floor(free / share) shares); CPU and memory bound it.
std::int64_t TasksThatFit(const Node& node, const NodeState& s, const TaskShape& shape,
                          GpuModelSet models) {
  if (!s.healthy) return 0;
  std::int64_t k = kMaxTasksPerNode;
  if (shape.cpu_milli > 0) k = std::min(k, s.free.cpu_milli / shape.cpu_milli);
  if (shape.memory_mib > 0) k = std::min(k, s.free.memory_mib / shape.memory_mib);
  if (shape.gpus > 0) {
    if (!models.Contains(node.gpu_model) || shape.gpu_milli <= 0) return 0;
    std::int64_t slots = 0;
    if (shape.IsShare()) {
      for (int g = 0; g < node.gpu_count; ++g) slots += s.gpu_free[g] / shape.gpu_milli;
    } else {
      int usable = 0;
      for (int g = 0; g < node.gpu_count; ++g) usable += s.gpu_free[g] >= shape.gpu_milli;
      slots = usable / shape.gpus;
    }
    k = std::min(k, slots);
  }
  return std::max<std::int64_t>(k, 0);
}

// Capacity units of one task: its milli-GPUs, or 1 per task when the whole gang is CPU-only.
std::int64_t UnitsPerTask(const TaskShape& shape, bool gang_has_gpus) {
  if (!gang_has_gpus) return 1;
  return shape.gpus > 0 ? shape.gpus * std::int64_t{shape.gpu_milli} : 0;
}

std::string LevelList(const Topology& topology) {
  std::string s;
  for (const auto& l : topology.levels) s += l + ", ";
  return s + "node";
}

}  // namespace

std::optional<int> LevelNumber(const Topology& topology, std::string_view name) {
  for (std::size_t i = 0; i < topology.levels.size(); ++i) {
    if (topology.levels[i] == name) return static_cast<int>(i);
  }
  if (name == "node") return static_cast<int>(topology.levels.size());
  return std::nullopt;
}

std::string LevelName(const Topology& topology, int level) {
  if (level <= kClusterLevel) return "cluster";
  if (level >= static_cast<int>(topology.levels.size())) return "node";
  return topology.levels[static_cast<std::size_t>(level)];
}

int SpanLevel(const Cluster& cluster, const Placement& p) {
  if (p.empty()) return kClusterLevel;
  const int named = static_cast<int>(cluster.topology().levels.size());
  const bool one_node = std::all_of(
      p.begin(), p.end(), [&](const TaskPlacement& t) { return t.node == p.front().node; });
  if (one_node) return named;
  for (int level = named - 1; level >= 0; --level) {
    const std::uint32_t d = DomainAt(cluster.node(p.front().node), level);
    if (d == kNoDomain) continue;
    const bool shared = std::all_of(p.begin(), p.end(), [&](const TaskPlacement& t) {
      return DomainAt(cluster.node(t.node), level) == d;
    });
    if (shared) return level;
  }
  return kClusterLevel;
}

TopologyTree TopologyTree::Build(const Cluster& cluster) {
  TopologyTree t;
  t.cluster_ = &cluster;
  const int named = static_cast<int>(cluster.topology().levels.size());
  t.node_level_ = named;
  const auto n = static_cast<std::uint32_t>(cluster.node_count());
  t.order_.reserve(n);
  for (const Node& node : cluster.nodes()) t.order_.push_back(node.id);
  auto key_less = [&](NodeId a, NodeId b) {
    const Node& x = cluster.node(a);
    const Node& y = cluster.node(b);
    for (int l = 0; l < named; ++l) {
      const auto dx = DomainAt(x, l);
      const auto dy = DomainAt(y, l);
      if (dx != dy) return dx < dy;
    }
    return a < b;
  };
  std::stable_sort(t.order_.begin(), t.order_.end(), key_less);

  t.levels_.resize(static_cast<std::size_t>(named) + 2);
  t.levels_[0].push_back(Vertex{0, n, 0, 0, 0, true});  // the root
  for (int l = 0; l < named; ++l) {
    auto& vs = t.levels_[static_cast<std::size_t>(l) + 1];
    for (std::uint32_t i = 0; i < n; ++i) {
      const Node& node = cluster.node(t.order_[i]);
      bool same = i > 0;
      // A new vertex whenever the path of domains down to this level changes.
      for (int k = 0; same && k <= l; ++k) {
        same = DomainAt(node, k) == DomainAt(cluster.node(t.order_[i - 1]), k);
      }
      if (same) {
        vs.back().end = i + 1;
      } else {
        const std::uint32_t d = DomainAt(node, l);
        vs.push_back(Vertex{i, i + 1, d, 0, 0, d != kNoDomain});
      }
    }
  }
  for (int l = 0; l < named; ++l) {
    t.multi_domain_ = t.multi_domain_ || t.levels_[static_cast<std::size_t>(l) + 1].size() > 1;
  }
  auto& nodes = t.levels_[static_cast<std::size_t>(named) + 1];
  nodes.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i)
    nodes.push_back(Vertex{i, i + 1, t.order_[i].value, 0, 0, true});
  // Children of each vertex are the next level's vertices inside its range (both are sorted).
  for (std::size_t l = 0; l + 1 < t.levels_.size(); ++l) {
    const auto& children = t.levels_[l + 1];
    std::uint32_t j = 0;
    for (Vertex& p : t.levels_[l]) {
      while (j < children.size() && children[j].begin < p.begin) ++j;
      p.first_child = j;
      while (j < children.size() && children[j].begin < p.end) ++j;
      p.child_count = j - p.first_child;
    }
  }
  return t;
}

void TopologyGangPlacer::Prepare(const ClusterState& state, const Workload& job) const {
  const bool has_gpus = job.TotalGpuMilli() > 0;
  groups_.clear();
  rank_group_.clear();
  need_ = 0;
  for (const auto& g : job.groups) {
    if (g.count <= 0) continue;
    const std::int64_t units = UnitsPerTask(g.shape, has_gpus);
    groups_.push_back(Group{g.shape, g.count, units});
    need_ += units * g.count;
    rank_group_.insert(rank_group_.end(), static_cast<std::size_t>(g.count),
                       static_cast<int>(groups_.size()) - 1);
  }
  const auto& order = tree_.order();
  const std::size_t n = order.size();
  cap_prefix_.assign(n + 1, 0);
  fit_prefix_.resize(groups_.size());
  for (auto& f : fit_prefix_) f.assign(n + 1, 0);
  const Cluster& cluster = state.cluster();
  // With the state's class index, how many tasks fit is computed once per class of equal
  // nodes (it depends on nothing else), then looked up node by node.
  const NodeClassIndex* index = state.class_index();
  const std::size_t classes = index != nullptr ? index->id_limit() : 0;
  class_fit_.assign(groups_.size() * classes, -1);
  for (std::size_t i = 0; i < n; ++i) {
    const Node& node = cluster.node(order[i]);
    const NodeState& s = state.node(order[i]);
    std::int64_t cap = 0;
    for (std::size_t g = 0; g < groups_.size(); ++g) {
      std::int64_t fit = 0;
      if (index != nullptr) {
        std::int64_t& f = class_fit_[g * classes + index->class_of(order[i])];
        if (f < 0) f = TasksThatFit(node, s, groups_[g].shape, job.allowed_models);
        fit = f;
      } else {
        fit = TasksThatFit(node, s, groups_[g].shape, job.allowed_models);
      }
      fit_prefix_[g][i + 1] = fit_prefix_[g][i] + fit;
      // A node offers at most what its best-served group could take from it: an upper bound
      // when groups differ, exact for the usual gang of identical workers.
      cap = std::max(cap, fit * groups_[g].units);
    }
    cap_prefix_[i + 1] = cap_prefix_[i] + cap;
  }
}

bool TopologyGangPlacer::MayFit(const TopologyTree::Vertex& v) const {
  if (Cap(v) < need_) return false;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    if (fit_prefix_[g][v.end] - fit_prefix_[g][v.begin] < groups_[g].count) return false;
  }
  return true;
}

// Appends the nodes of `vertex` to use for `need` units, domain by domain: when one child can
// hold all of `need`, the child with the least capacity that can (best fit, ties by index);
// otherwise the child with the most capacity (fewest children spanned), and repeat for the
// rest. Children are visited whole, so the nodes of one domain stay together.
void TopologyGangPlacer::Collect(int level, std::uint32_t vertex, std::int64_t need,
                                 std::vector<NodeId>& out) const {
  const TopologyTree::Vertex& v = tree_.vertices(level)[vertex];
  if (level == tree_.node_level()) {
    out.push_back(tree_.order()[v.begin]);
    return;
  }
  const auto& children = tree_.vertices(level + 1);
  std::vector<std::pair<std::int64_t, std::uint32_t>> kids;  // (capacity, child), cap > 0
  kids.reserve(v.child_count);
  for (std::uint32_t c = v.first_child; c < v.first_child + v.child_count; ++c) {
    if (level + 1 < tree_.node_level() && !children[c].named) continue;
    if (const auto cap = Cap(children[c]); cap > 0) kids.emplace_back(cap, c);
  }
  std::sort(kids.begin(), kids.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::size_t p = 0;
  while (need > 0 && p < kids.size()) {
    // Children that could hold all of `need` are a prefix of kids[p..): take the last capacity
    // value among them (the tightest), at its lowest index.
    const auto q = static_cast<std::size_t>(
        std::partition_point(kids.begin() + static_cast<long>(p), kids.end(),
                             [&](const auto& k) { return k.first >= need; }) -
        kids.begin());
    if (q > p) {
      const std::int64_t tight = kids[q - 1].first;
      const auto j = static_cast<std::size_t>(
          std::partition_point(kids.begin() + static_cast<long>(p),
                               kids.begin() + static_cast<long>(q),
                               [&](const auto& k) { return k.first > tight; }) -
          kids.begin());
      Collect(level + 1, kids[j].second, need, out);
      return;
    }
    Collect(level + 1, kids[p].second, kids[p].first, out);
    need -= kids[p].first;
    ++p;
  }
}

bool TopologyGangPlacer::Fill(ClusterState& state, NodeId node, Rng& rng,
                              Placement& placement) const {
  const Node& n = state.cluster().node(node);
  const std::size_t total = rank_group_.size();
  while (placement.size() < total) {
    const Group& g = groups_[static_cast<std::size_t>(rank_group_[placement.size()])];
    const TaskShape& shape = g.shape;
    // Feasibility as TaskPlacer checks it; the GPUs within the node come from the policy.
    if (!TaskFitsNode(n, state.node(node), shape, models_)) break;
    const NodeScore score = policy_.Score(state, node, shape, rng);
    if (shape.gpus > 0 && std::popcount(score.gpu_mask) != shape.gpus) break;
    const TaskPlacement t{
        node, shape.gpus > 0 ? policy_.FinalGpus(state, node, shape, score, rng) : std::uint16_t{0},
        shape.gpus > 0 ? shape.gpu_milli : 0, shape.cpu_milli, shape.memory_mib};
    if (!state.Apply({t})) break;
    placement.push_back(t);
  }
  return placement.size() == total;
}

bool TopologyGangPlacer::TryVertex(ClusterState& state, int level, std::uint32_t vertex, Rng& rng,
                                   Placement& placement) const {
  walk_.clear();
  Collect(level, vertex, need_, walk_);
  placement.clear();
  for (NodeId id : walk_) {
    if (Fill(state, id, rng, placement)) return true;
  }
  // The capacity estimate can be generous when groups differ; try every node of the domain
  // before giving up on it.
  const TopologyTree::Vertex& v = tree_.vertices(level)[vertex];
  for (std::uint32_t i = v.begin; i < v.end; ++i) {
    if (Fill(state, tree_.order()[i], rng, placement)) return true;
  }
  state.Release(placement);
  placement.clear();
  return false;
}

std::optional<Placement> TopologyGangPlacer::Place(ClusterState& state, const Workload& job,
                                                   Rng& rng, GangPlacementInfo* info) const {
  const Topology& topology = state.cluster().topology();
  const int node_level = tree_.node_level();
  int require = kClusterLevel;
  int prefer = node_level;  // no preference: as tight as the cluster allows
  if (!job.topology.require.empty()) {
    const auto r = LevelNumber(topology, job.topology.require);
    if (!r) return std::nullopt;
    require = *r;
  }
  if (!job.topology.prefer.empty()) {
    const auto p = LevelNumber(topology, job.topology.prefer);
    if (!p) return std::nullopt;
    prefer = *p;
  }
  // A preference wider than the requirement adds nothing: start at the requirement.
  const int start = std::max(prefer, require);
  if (info != nullptr) *info = GangPlacementInfo{start, kClusterLevel, kClusterLevel};
  if (job.TaskCount() == 0) return Placement{};
  if (job.TotalGpuMilli() > state.free_gpu_milli()) return std::nullopt;
  models_ = job.allowed_models;
  Prepare(state, job);

  Placement placement;
  placement.reserve(rank_group_.size());
  std::vector<std::pair<std::int64_t, std::uint32_t>> candidates;  // (capacity, vertex)
  for (int level = start; level >= require; --level) {
    const auto& vs = tree_.vertices(level);
    candidates.clear();
    for (std::uint32_t i = 0; i < vs.size(); ++i) {
      if (level != kClusterLevel && level != node_level && !vs[i].named) continue;
      if (MayFit(vs[i])) candidates.emplace_back(Cap(vs[i]), i);
    }
    if (candidates.empty()) continue;
    // Best fit: the domain with the least capacity that may hold the gang, ties by index. The
    // first usually succeeds, so only sort when it does not.
    auto first = std::min_element(candidates.begin(), candidates.end());
    std::iter_swap(candidates.begin(), first);
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      if (c == 1) std::sort(candidates.begin() + 1, candidates.end());
      if (TryVertex(state, level, candidates[c].second, rng, placement)) {
        if (info != nullptr) {
          info->level = level;
          info->span_level = SpanLevel(state.cluster(), placement);
        }
        return placement;
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> TopologyNeverFitsReason(const Cluster& cluster, const Workload& job) {
  const Topology& topology = cluster.topology();
  for (const auto& [key, level] :
       {std::pair<const char*, const std::string*>{"require", &job.topology.require},
        {"prefer", &job.topology.prefer}}) {
    if (level->empty() || LevelNumber(topology, *level)) continue;
    return "topology." + std::string(key) + ": level '" + *level +
           "' does not exist in this cluster (levels: " + LevelList(topology) + ")";
  }
  if (job.topology.require.empty() || job.TaskCount() <= 1) return std::nullopt;
  const int require = *LevelNumber(topology, job.topology.require);
  const int node_level = static_cast<int>(topology.levels.size());
  const bool has_gpus = job.TotalGpuMilli() > 0;
  std::int64_t need = 0;
  for (const auto& g : job.groups) need += UnitsPerTask(g.shape, has_gpus) * g.count;

  // Per domain of the required level, on the empty cluster: capacity units and tasks of each
  // group that fit, as the placer estimates them.
  struct Domain {
    std::int64_t cap = 0;
    std::int64_t gpus = 0;
    std::vector<std::int64_t> fit;
  };
  std::vector<Domain> domains;
  for (const Node& n : cluster.nodes()) {
    const std::uint32_t d = require == node_level ? n.id.value : DomainAt(n, require);
    if (d == kNoDomain) continue;
    if (d >= domains.size()) domains.resize(d + 1);
    Domain& dom = domains[d];
    dom.fit.resize(job.groups.size(), 0);
    NodeState empty;
    empty.free = n.capacity;
    for (int g = 0; g < n.gpu_count; ++g) empty.gpu_free[g] = kMilliPerGpu;
    std::int64_t cap = 0;
    for (std::size_t g = 0; g < job.groups.size(); ++g) {
      const auto& group = job.groups[g];
      const auto fit = TasksThatFit(n, empty, group.shape, job.allowed_models);
      dom.fit[g] += fit;
      cap = std::max(cap, fit * UnitsPerTask(group.shape, has_gpus));
    }
    dom.cap += cap;
    if (job.allowed_models.Contains(n.gpu_model)) dom.gpus += n.gpu_count;
  }
  std::int64_t largest = 0;
  for (const Domain& d : domains) {
    bool fits = d.cap >= need && !d.fit.empty();
    for (std::size_t g = 0; fits && g < job.groups.size(); ++g)
      fits = d.fit[g] >= job.groups[g].count;
    if (fits) return std::nullopt;
    largest = std::max(largest, d.gpus);
  }
  const std::string& name = job.topology.require;
  return "topology.require: " + name + ": no " + name + " can ever hold the job's " +
         std::to_string(job.TaskCount()) + " tasks (" +
         std::to_string(job.TotalGpuMilli() / kMilliPerGpu) + " GPUs); the largest " + name +
         " has " + std::to_string(largest) + " GPUs of an accepted model";
}

}  // namespace tessera
