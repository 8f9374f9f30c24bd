#include "core/node_class_index.h"

#include <algorithm>
#include <bit>

#include "core/cluster_state.h"

namespace tessera {

namespace {

// The r-th (from 0) set bit of `bits`. REQUIRES: r < popcount(bits).
int NthBit(std::uint64_t bits, std::uint64_t r) {
  for (; r > 0; --r) bits &= bits - 1;
  return std::countr_zero(bits);
}

std::uint32_t FirstPosition(const std::vector<NodeClassIndex::Word>& words) {
  return words.front().first * 64 +
         static_cast<std::uint32_t>(std::countr_zero(words.front().second));
}

}  // namespace

NodeClassKey NodeClassKey::Of(const Node& node, const NodeState& s,
                              const std::vector<std::pair<std::int32_t, std::uint32_t>>& tags) {
  NodeClassKey k;
  k.cpu_free = s.free.cpu_milli;
  k.memory_free = s.free.memory_mib;
  k.gpu_free = s.free.gpu_milli;
  k.cpu_capacity = node.capacity.cpu_milli;
  k.memory_capacity = node.capacity.memory_mib;
  std::copy_n(s.gpu_free.begin(), node.gpu_count, k.gpu_free_each.begin());
  for (const auto& [tag, count] : tags) k.affinity_tags |= 1U << static_cast<unsigned>(tag);
  k.model = node.gpu_model;
  k.gpus = static_cast<std::uint8_t>(node.gpu_count);
  k.healthy = s.healthy;
  return k;
}

std::size_t NodeClassKeyHash::operator()(const NodeClassKey& k) const noexcept {
  std::uint64_t h = 0x9E3779B97F4A7C15ULL;
  auto mix = [&](std::uint64_t v) {
    h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
    h *= 0xBF58476D1CE4E5B9ULL;
  };
  mix(static_cast<std::uint64_t>(k.cpu_free));
  mix(static_cast<std::uint64_t>(k.memory_free));
  mix(static_cast<std::uint64_t>(k.gpu_free));
  mix(static_cast<std::uint64_t>(k.cpu_capacity) ^ static_cast<std::uint64_t>(k.memory_capacity)
                                                       << 20);
  for (int g = 0; g < k.gpus; g += 2) {
    mix(static_cast<std::uint32_t>(k.gpu_free_each[g]) |
        std::uint64_t{static_cast<std::uint32_t>(k.gpu_free_each[g + 1])} << 32);
  }
  mix(k.affinity_tags | std::uint64_t{k.model} << 32 | std::uint64_t{k.gpus} << 40 |
      std::uint64_t{k.healthy} << 48);
  return static_cast<std::size_t>(h ^ (h >> 29));
}

NodeClassIndex::NodeClassIndex(const ClusterState& state, std::shared_ptr<const NodeOrder> order)
    : order_(std::move(order)), node_class_(static_cast<std::size_t>(state.node_count())) {
  const Cluster& cluster = state.cluster();
  for (const Node& n : cluster.nodes()) {
    const std::uint32_t c =
        ClassFor(NodeClassKey::Of(n, state.node(n.id), state.gpu_affinities(n.id)));
    node_class_[n.id.value] = c;
    Insert(c, PositionOf(n.id));
  }
}

void NodeClassIndex::Update(const ClusterState& state, NodeId id) {
  const NodeClassKey key =
      NodeClassKey::Of(state.cluster().node(id), state.node(id), state.gpu_affinities(id));
  const std::uint32_t old = node_class_[id.value];
  if (classes_[old].key == key) return;
  const std::uint32_t position = PositionOf(id);
  Erase(old, position);
  const std::uint32_t c = ClassFor(key);
  node_class_[id.value] = c;
  Insert(c, position);
}

std::uint32_t NodeClassIndex::ClassFor(const NodeClassKey& key) {
  auto [it, inserted] = by_key_.try_emplace(key, 0);
  if (!inserted) return it->second;
  std::uint32_t id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    id = static_cast<std::uint32_t>(classes_.size());
    classes_.emplace_back();
  }
  Class& c = classes_[id];
  c.key = key;
  c.stamp = ++*stamps_;
  c.count = 0;
  c.words.clear();
  c.block_count.assign(blocks(), 0);
  c.block_start.assign(blocks() + 1, 0);
  c.active_at = static_cast<std::uint32_t>(active_.size());
  active_.push_back(id);
  it->second = id;
  return id;
}

void NodeClassIndex::Insert(std::uint32_t id, std::uint32_t position) {
  Class& c = classes_[id];
  const std::uint32_t w = position / 64;
  const std::uint32_t b = position / kBlockPositions;
  const std::uint64_t bit = std::uint64_t{1} << (position % 64);
  const auto begin = c.words.begin() + c.block_start[b];
  const auto end = c.words.begin() + c.block_start[b + 1];
  auto it = std::lower_bound(begin, end, Word{w, 0},
                             [](const Word& x, const Word& y) { return x.first < y.first; });
  if (it != end && it->first == w) {
    it->second |= bit;
  } else {
    c.words.insert(it, Word{w, bit});
    for (std::size_t k = b + 1; k < c.block_start.size(); ++k) ++c.block_start[k];
  }
  ++c.block_count[b];
  ++c.count;
}

void NodeClassIndex::Erase(std::uint32_t id, std::uint32_t position) {
  Class& c = classes_[id];
  const std::uint32_t w = position / 64;
  const std::uint32_t b = position / kBlockPositions;
  const auto begin = c.words.begin() + c.block_start[b];
  const auto end = c.words.begin() + c.block_start[b + 1];
  auto it = std::lower_bound(begin, end, Word{w, 0},
                             [](const Word& x, const Word& y) { return x.first < y.first; });
  it->second &= ~(std::uint64_t{1} << (position % 64));
  if (it->second == 0) {
    c.words.erase(it);
    for (std::size_t k = b + 1; k < c.block_start.size(); ++k) --c.block_start[k];
  }
  --c.block_count[b];
  if (--c.count > 0) return;
  // The class is empty: its id is free, its key forgotten.
  by_key_.erase(c.key);
  const std::uint32_t last = active_.back();
  active_[c.active_at] = last;
  classes_[last].active_at = c.active_at;
  active_.pop_back();
  free_ids_.push_back(id);
}

NodeId NodeClassIndex::First(std::uint32_t id) const {
  return NodeAt(FirstPosition(classes_[id].words));
}

NodeId NodeClassIndex::First(const std::vector<std::uint32_t>& ids) const {
  std::uint32_t best = UINT32_MAX;
  for (std::uint32_t id : ids) best = std::min(best, FirstPosition(classes_[id].words));
  return NodeAt(best);
}

NodeId NodeClassIndex::Nth(const std::vector<std::uint32_t>& ids, std::uint64_t r) const {
  // The block that holds the r-th member: the classes' counts summed block by block (the
  // classes are disjoint), then the r-th member inside it.
  const std::uint32_t n = blocks();
  block_sums_.assign(n, 0);
  for (std::uint32_t id : ids) {
    const std::uint16_t* counts = classes_[id].block_count.data();
    for (std::uint32_t b = 0; b < n; ++b) block_sums_[b] += counts[b];
  }
  for (std::uint32_t b = 0; b < n; ++b) {
    if (r < block_sums_[b]) return NodeAt(NthInBlock(ids, b, r));
    r -= block_sums_[b];
  }
  return NodeId();  // unreachable under the precondition
}

std::uint32_t NodeClassIndex::NthInBlock(const std::vector<std::uint32_t>& ids, std::uint32_t block,
                                         std::uint64_t r) const {
  std::array<std::uint64_t, kWordsPerBlock> bits{};
  const std::uint32_t first_word = block * kWordsPerBlock;
  for (std::uint32_t id : ids) {
    const Class& c = classes_[id];
    for (std::uint32_t k = c.block_start[block]; k < c.block_start[block + 1]; ++k) {
      bits[c.words[k].first - first_word] |= c.words[k].second;
    }
  }
  for (std::uint32_t i = 0; i < kWordsPerBlock; ++i) {
    const auto n = static_cast<std::uint64_t>(std::popcount(bits[i]));
    if (r < n) return (first_word + i) * 64 + static_cast<std::uint32_t>(NthBit(bits[i], r));
    r -= n;
  }
  return 0;  // unreachable: the block holds more than r members
}

}  // namespace tessera
