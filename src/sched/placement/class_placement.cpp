// Placing one task through the state's class index (core/node_class_index.h): score one node
// per class of equal nodes, then break the tie among the members of the best classes exactly
// as the scan over every node breaks it (the tied node earliest in the placement's drawn node
// order, tie_walk.h, for a seeded draw; the first in the policy's node order otherwise). The cost
// grows with the number of distinct node states, not with the number of nodes.
#include <algorithm>
#include <bit>

#include "sched/placement/task_placer.h"
#include "sched/placement/tie_walk.h"

namespace tessera {

namespace {
// A state placed on this many times without an index gets one: building it costs about as much
// as a few scans, and most states are placed on once or twice (a probe) or very often (a cycle).
constexpr std::uint32_t kScansBeforeIndex = 8;
// Below this many nodes a scan costs less than keeping the index up to date on every change
// (the ITP replays on 64 nodes, whose backfill probes release and re-apply many placements).
constexpr int kMinNodesForIndex = 256;
// Up to this many tied nodes the seeded tie-break visits each of them; beyond, it walks the
// drawn node order until it meets one (about nodes / tied steps).
constexpr std::uint64_t kTiedNodesVisited = 64;

// The member of the classes `tied` (`members` nodes together) earliest in `walk`.
NodeId EarliestTied(const NodeClassIndex& index, const std::vector<std::uint32_t>& tied,
                    std::uint64_t members, const TieWalk& walk) {
  if (members <= kTiedNodesVisited) {
    NodeId best = index.Nth(tied, 0);
    for (std::uint64_t r = 1; r < members; ++r) {
      const NodeId id = index.Nth(tied, r);
      if (walk.PositionOf(id) < walk.PositionOf(best)) best = id;
    }
    return best;
  }
  // Ends: the walk visits every node, the tied ones among them.
  for (std::uint64_t p = 0;; ++p) {
    const NodeId id = walk.At(p);
    if (std::ranges::find(tied, index.class_of(id)) != tied.end()) return id;
  }
}
}  // namespace

ScoreCache::Entry* ScoreCache::ClassRow(int shape, const NodeClassIndex& index) {
  if (auto lineage = index.lineage(); lineage != class_lineage_) {
    for (auto& row : class_entries_) row.clear();
    class_lineage_ = std::move(lineage);
  }
  const auto s = static_cast<std::size_t>(shape);
  if (s >= class_entries_.size()) class_entries_.resize(s + 1);
  if (class_entries_[s].size() < index.id_limit()) class_entries_[s].resize(index.id_limit());
  return class_entries_[s].data();
}

const std::shared_ptr<const NodeOrder>* ScoreCache::TieOrder(const Cluster& cluster,
                                                             const PlacementPolicy& policy) {
  if (policy.tie_break() == TieBreak::kSeededDraw) return &id_order_;
  const auto n = static_cast<std::size_t>(cluster.node_count());
  if (tie_order_.cluster != &cluster || tie_order_.nodes != cluster.nodes().data() ||
      tie_order_.node_count != n) {
    tie_order_ = TieOrderMemo{&cluster, cluster.nodes().data(), n, false, nullptr};
    const auto& rank = policy.node_rank();
    // The scan compares ranks only when both nodes have one, else names: an order over all
    // nodes exists when every node has a rank or none has.
    if (!rank.empty() && rank.size() < n) return nullptr;
    auto order = std::make_shared<NodeOrder>();
    for (std::uint32_t i = 0; i < n; ++i) order->node_at.push_back(NodeId(i));
    // Stable: among equal ranks (or names) the scan keeps the lowest id.
    std::stable_sort(order->node_at.begin(), order->node_at.end(), [&](NodeId a, NodeId b) {
      if (!rank.empty()) return rank[a.value] < rank[b.value];
      return cluster.node(a).name < cluster.node(b).name;
    });
    order->position.resize(n);
    for (std::uint32_t p = 0; p < n; ++p) order->position[order->node_at[p].value] = p;
    tie_order_.order = std::move(order);
    tie_order_.indexable = true;
  }
  return tie_order_.indexable ? &tie_order_.order : nullptr;
}

const NodeClassIndex* TaskPlacer::ClassIndexFor(const ClusterState& state) const {
  if (cache_ == nullptr || !cache_->index_classes()) return nullptr;
  if (!policy_.deterministic() || !policy_.scores_from_state()) return nullptr;
  if (state.node_count() < kMinNodesForIndex) return nullptr;
  const std::shared_ptr<const NodeOrder>* order = cache_->TieOrder(state.cluster(), policy_);
  if (order == nullptr) return nullptr;
  return state.ClassIndexAfterScans(*order, kScansBeforeIndex);
}

std::optional<TaskPlacement> TaskPlacer::PlaceByClass(const ClusterState& state,
                                                      const NodeClassIndex& index,
                                                      const TaskShape& shape, GpuModelSet models,
                                                      Rng& rng) const {
  const int shape_id = cache_->ShapeId(shape, models);
  ScoreCache::Entry* const row = cache_->ClassRow(shape_id, index);
  const Cluster& cluster = state.cluster();
  NodeScore best_score;
  std::vector<std::uint32_t>& tied = tied_classes_;
  tied.clear();
  std::uint64_t members = 0;  // of the tied classes
  for (const std::uint32_t c : index.active()) {
    const NodeClassIndex::Class& cls = index.at(c);
    ScoreCache::Entry& e = row[c];
    if (e.version_plus_one != cls.stamp + 1) {
      // Any member stands for the class: the policy scores from the class's key alone.
      const NodeId any = index.First(c);
      bool fits = TaskFitsNode(cluster.node(any), state.node(any), shape, models);
      NodeScore score;
      if (fits) {
        score = policy_.Score(state, any, shape, rng);
        fits = shape.gpus == 0 || std::popcount(score.gpu_mask) == shape.gpus;
      }
      e = ScoreCache::Entry{cls.stamp + 1, fits, score};
    }
    if (!e.fits) continue;
    if (tied.empty() || e.score.score > best_score.score) {
      best_score = e.score;
      tied.assign(1, c);
      members = cls.count;
    } else if (e.score.score == best_score.score) {
      tied.push_back(c);
      members += cls.count;
    }
  }
  if (tied.empty()) return std::nullopt;
  NodeId best;
  if (members > 1 && policy_.tie_break() == TieBreak::kSeededDraw) {
    best = EarliestTied(index, tied, members,
                        TieWalk(rng, static_cast<std::uint32_t>(state.node_count())));
  } else {
    best = index.First(tied);
  }
  // Its class's score and GPUs hold for every member (scores_from_state); tied classes may
  // differ in GPUs.
  return PlaceOn(state, best, shape, row[index.class_of(best)].score, rng);
}

}  // namespace tessera
