// An index of a ClusterState's nodes by class: nodes whose NodeClassKey is equal (same node
// type, health, free CPU, memory and GPU milli, the free milli of each GPU in GPU order, and
// the set of GPU-affinity tags of their tasks) form one class. A placement policy that scores
// from these alone (PlacementPolicy::scores_from_state) gives every node of a class the same
// score, so the placer scores one member per class and only breaks the tie among the members
// of the winning classes. The classes partition the nodes; each class keeps its members as a
// sorted set of positions in a fixed node order (by node id, or a tie-break order), with its
// member count per block of kBlockPositions positions, so that "the first member" costs one
// word and "the r-th member of several classes together" costs their counts per block plus one
// block of their words, never a walk over every node.
//
// Kept up to date by ClusterState on every change of a node (O(1) expected per change, plus a
// word insert into the class's sorted word list). Copied with the state. Not thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/cluster.h"
#include "core/ids.h"

namespace tessera {

struct NodeState;

// Everything a state-scoring policy may read about a node, and nothing else: no name, id or
// topology domain.
struct NodeClassKey {
  std::int64_t cpu_free = 0;
  std::int64_t memory_free = 0;
  std::int64_t gpu_free = 0;
  std::int64_t cpu_capacity = 0;
  std::int64_t memory_capacity = 0;
  std::array<std::int32_t, kMaxGpusPerNode> gpu_free_each{};  // in GPU order; 0 past gpus
  std::uint32_t affinity_tags = 0;  // bit t: some task on the node holds GpuAffinityTag t
  std::uint8_t model = 0;
  std::uint8_t gpus = 0;
  bool healthy = true;

  static NodeClassKey Of(const Node& node, const NodeState& s,
                         const std::vector<std::pair<std::int32_t, std::uint32_t>>& tags);
  friend bool operator==(const NodeClassKey&, const NodeClassKey&) = default;
};

struct NodeClassKeyHash {
  std::size_t operator()(const NodeClassKey& k) const noexcept;
};

// A fixed order of the nodes for tie-breaks: position[node id] and its inverse.
struct NodeOrder {
  std::vector<std::uint32_t> position;
  std::vector<NodeId> node_at;
};

class ClusterState;

class NodeClassIndex {
 public:
  using Word = std::pair<std::uint32_t, std::uint64_t>;  // (position / 64, member bits)
  // Positions per block of member counts: 16 words. At 12,500 nodes a draw among every class
  // sums 13 counts per class, then ORs at most 16 words per class.
  static constexpr std::uint32_t kBlockPositions = 1024;
  static constexpr std::uint32_t kWordsPerBlock = kBlockPositions / 64;
  struct Class {
    NodeClassKey key;
    std::uint64_t stamp = 0;  // new for every class ever created in this index and its copies
    std::uint32_t count = 0;  // members; 0 = the id is free
    std::uint32_t active_at = 0;
    std::vector<Word> words;                 // sorted by word index, no zero words
    std::vector<std::uint16_t> block_count;  // members per block of kBlockPositions positions
    // words[block_start[b] .. block_start[b + 1]) are the words of block b (blocks + 1 entries).
    std::vector<std::uint32_t> block_start;
  };

  // Classifies every node of `state`. `order` (null = node ids) fixes the member order.
  NodeClassIndex(const ClusterState& state, std::shared_ptr<const NodeOrder> order);

  // Moves node `id` to the class of its current state in `state`.
  void Update(const ClusterState& state, NodeId id);

  // The ids of the classes with members, in no defined order (callers choose by score, then
  // by member position, so the order does not matter).
  const std::vector<std::uint32_t>& active() const { return active_; }
  const Class& at(std::uint32_t id) const { return classes_[id]; }
  // The class of node `id`.
  std::uint32_t class_of(NodeId id) const { return node_class_[id.value]; }
  // Every class id is below this.
  std::size_t id_limit() const { return classes_.size(); }
  // Identifies this index and its copies (stamps are unique within one lineage); holding it
  // keeps the identity from being reused.
  std::shared_ptr<const void> lineage() const { return stamps_; }
  const NodeOrder* order() const { return order_.get(); }

  // The member of class `id` first in the node order.
  NodeId First(std::uint32_t id) const;
  // Among the members of `ids` (distinct classes) together: the first in the node order, and
  // the r-th (from 0) in the node order. REQUIRES: r < the members' count.
  NodeId First(const std::vector<std::uint32_t>& ids) const;
  NodeId Nth(const std::vector<std::uint32_t>& ids, std::uint64_t r) const;

 private:
  std::uint32_t PositionOf(NodeId id) const {
    return order_ ? order_->position[id.value] : id.value;
  }
  NodeId NodeAt(std::uint32_t position) const {
    return order_ ? order_->node_at[position] : NodeId(position);
  }
  std::uint32_t ClassFor(const NodeClassKey& key);
  void Insert(std::uint32_t id, std::uint32_t position);
  void Erase(std::uint32_t id, std::uint32_t position);
  // The position of the r-th (from 0) member of the classes `ids` together inside `block`.
  std::uint32_t NthInBlock(const std::vector<std::uint32_t>& ids, std::uint32_t block,
                           std::uint64_t r) const;
  std::uint32_t blocks() const {
    return static_cast<std::uint32_t>((node_class_.size() + kBlockPositions - 1) / kBlockPositions);
  }

  std::shared_ptr<const NodeOrder> order_;
  std::shared_ptr<std::uint64_t> stamps_ = std::make_shared<std::uint64_t>(0);
  std::vector<std::uint32_t> node_class_;  // by node id
  std::vector<Class> classes_;
  std::vector<std::uint32_t> free_ids_;
  std::vector<std::uint32_t> active_;
  std::unordered_map<NodeClassKey, std::uint32_t, NodeClassKeyHash> by_key_;  // live classes
  mutable std::vector<std::uint32_t> block_sums_;                             // scratch for Nth
};

// A ClusterState's index, or none; deep-copied with the state.
class NodeClassIndexSlot {
 public:
  NodeClassIndexSlot() = default;
  NodeClassIndexSlot(const NodeClassIndexSlot& o)
      : index_(o.index_ ? std::make_unique<NodeClassIndex>(*o.index_) : nullptr),
        scans_(o.scans_) {}
  NodeClassIndexSlot& operator=(const NodeClassIndexSlot& o) {
    if (this != &o) {
      index_ = o.index_ ? std::make_unique<NodeClassIndex>(*o.index_) : nullptr;
      scans_ = o.scans_;
    }
    return *this;
  }
  NodeClassIndexSlot(NodeClassIndexSlot&&) = default;
  NodeClassIndexSlot& operator=(NodeClassIndexSlot&&) = default;

  NodeClassIndex* get() const { return index_.get(); }
  void reset(std::unique_ptr<NodeClassIndex> index) { index_ = std::move(index); }
  // Placements that scanned this state while it had no index (see ClusterState::ClassIndex).
  std::uint32_t& scans() { return scans_; }

 private:
  std::unique_ptr<NodeClassIndex> index_;
  std::uint32_t scans_ = 0;
};

}  // namespace tessera
