// Which replica holds which prompt blocks: the router's view of the replicas' KV caches.
// It learns from routing decisions (the replica a request went to will hold its blocks) and is
// corrected by the replicas' KV events (stored, removed, all cleared) when they send them. For
// engines that send no events, a per-replica capacity makes it forget each replica's least
// recently routed blocks, as SGLang's router trims its approximate trees.
//
// Without a capacity the index keeps only the holder bitsets and a count per replica (an "all
// cleared" event then walks the index once: rare, a replica restarting). With one, each replica
// also keeps its blocks in LRU order.
//
// Lookup is by the prompt's own blocks: each block's holders are a bitset over replicas, and the
// longest cached prefix of every replica falls out of intersecting those bitsets along the
// prompt, so a decision costs O(prompt blocks x replicas/64), never a scan of the index.
// Not thread-safe; deterministic (no decision depends on hash-map iteration order).
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

#include "serve/block_hash.h"

namespace tessera::serve {

class KvBlockIndex {
 public:
  // REQUIRES: replicas > 0, capacity_per_replica >= 0 (0 = no bound).
  explicit KvBlockIndex(int replicas, std::int64_t capacity_per_replica = 0);

  int replicas() const { return replicas_; }

  // `replica` holds `blocks` now (a KV "stored" event, or a routing decision); each becomes the
  // replica's most recently used. Returns how many of them the index already placed there.
  std::int64_t Stored(int replica, std::span<const BlockHash> blocks);
  // `replica` no longer holds `blocks` (a KV "removed" event). Unknown blocks are ignored.
  void Removed(int replica, std::span<const BlockHash> blocks);
  // `replica` holds nothing (an "all cleared" event, or the replica restarted).
  void Cleared(int replica);
  // Whether the capacity applies to `replica`. Off for a replica whose KV events keep its
  // blocks exact: forgetting in routing order (not the engine's eviction order) would only drop
  // blocks it still holds.
  void SetBounded(int replica, bool bounded);
  bool bounded(int replica) const;

  // (*matched)[r] = how many leading blocks of `blocks` replica r holds; resized to replicas().
  void MatchPrefix(std::span<const BlockHash> blocks, std::vector<std::int32_t>* matched) const;

  std::int64_t blocks_on(int replica) const;
  std::size_t distinct_blocks() const { return slot_of_.size(); }

 private:
  struct ReplicaBlocks {
    std::list<BlockHash> lru;  // most recent first
    std::unordered_map<BlockHash, std::list<BlockHash>::iterator> at;
  };

  std::uint64_t* Holders(std::uint32_t slot) { return &holders_[slot * words_]; }
  const std::uint64_t* Holders(std::uint32_t slot) const { return &holders_[slot * words_]; }
  // Both return whether the replica's bit changed.
  bool SetHolder(BlockHash block, int replica);
  bool ClearHolder(BlockHash block, int replica);

  int replicas_;
  std::size_t words_;
  std::int64_t capacity_;
  std::unordered_map<BlockHash, std::uint32_t> slot_of_;
  std::vector<std::uint64_t> holders_;  // words_ per slot
  std::vector<std::int32_t> holder_count_;
  std::vector<std::uint32_t> free_slots_;
  std::vector<ReplicaBlocks> per_replica_;  // only with a capacity
  std::vector<bool> bounded_;               // per replica: the capacity applies
  std::vector<std::int64_t> count_;         // blocks per replica
};

}  // namespace tessera::serve
