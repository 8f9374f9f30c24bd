#include "serve/kv_block_index.h"

#include <algorithm>
#include <bit>

namespace tessera::serve {

KvBlockIndex::KvBlockIndex(int replicas, std::int64_t capacity_per_replica)
    : replicas_(replicas),
      words_(static_cast<std::size_t>((replicas + 63) / 64)),
      capacity_(capacity_per_replica),
      per_replica_(static_cast<std::size_t>(replicas)) {}

void KvBlockIndex::SetHolder(BlockHash block, int replica) {
  auto [it, inserted] = slot_of_.try_emplace(block, 0);
  if (inserted) {
    if (free_slots_.empty()) {
      it->second = static_cast<std::uint32_t>(holder_count_.size());
      holder_count_.push_back(0);
      holders_.resize(holders_.size() + words_, 0);
    } else {
      it->second = free_slots_.back();
      free_slots_.pop_back();
    }
  }
  const std::uint32_t slot = it->second;
  Holders(slot)[replica / 64] |= std::uint64_t{1} << (replica % 64);
  ++holder_count_[slot];
}

void KvBlockIndex::ClearHolder(BlockHash block, int replica) {
  auto it = slot_of_.find(block);
  if (it == slot_of_.end()) return;
  const std::uint32_t slot = it->second;
  Holders(slot)[replica / 64] &= ~(std::uint64_t{1} << (replica % 64));
  if (--holder_count_[slot] == 0) {
    free_slots_.push_back(slot);
    slot_of_.erase(it);
  }
}

void KvBlockIndex::Stored(int replica, std::span<const BlockHash> blocks) {
  ReplicaBlocks& r = per_replica_[static_cast<std::size_t>(replica)];
  for (BlockHash b : blocks) {
    if (auto it = r.at.find(b); it != r.at.end()) {
      r.lru.splice(r.lru.begin(), r.lru, it->second);
      continue;
    }
    r.lru.push_front(b);
    r.at.emplace(b, r.lru.begin());
    SetHolder(b, replica);
  }
  while (capacity_ > 0 && static_cast<std::int64_t>(r.lru.size()) > capacity_) {
    const BlockHash oldest = r.lru.back();
    r.lru.pop_back();
    r.at.erase(oldest);
    ClearHolder(oldest, replica);
  }
}

void KvBlockIndex::Removed(int replica, std::span<const BlockHash> blocks) {
  ReplicaBlocks& r = per_replica_[static_cast<std::size_t>(replica)];
  for (BlockHash b : blocks) {
    auto it = r.at.find(b);
    if (it == r.at.end()) continue;
    r.lru.erase(it->second);
    r.at.erase(it);
    ClearHolder(b, replica);
  }
}

void KvBlockIndex::Cleared(int replica) {
  ReplicaBlocks& r = per_replica_[static_cast<std::size_t>(replica)];
  for (BlockHash b : r.lru) ClearHolder(b, replica);  // list order: deterministic
  r.lru.clear();
  r.at.clear();
}

void KvBlockIndex::MatchPrefix(std::span<const BlockHash> blocks,
                               std::vector<std::int32_t>* matched) const {
  matched->assign(static_cast<std::size_t>(replicas_), 0);
  std::vector<std::uint64_t> alive(words_, ~std::uint64_t{0});
  if (replicas_ % 64 != 0) alive.back() = (std::uint64_t{1} << (replicas_ % 64)) - 1;
  std::int32_t depth = 0;
  bool any = true;
  for (BlockHash b : blocks) {
    auto it = slot_of_.find(b);
    const std::uint64_t* holders = it == slot_of_.end() ? nullptr : Holders(it->second);
    any = false;
    for (std::size_t w = 0; w < words_; ++w) {
      const std::uint64_t next = holders == nullptr ? 0 : alive[w] & holders[w];
      // Replicas whose prefix ends here keep `depth` blocks.
      for (std::uint64_t gone = alive[w] & ~next; gone != 0; gone &= gone - 1) {
        (*matched)[w * 64 + static_cast<std::size_t>(std::countr_zero(gone))] = depth;
      }
      alive[w] = next;
      any |= next != 0;
    }
    if (!any) return;
    ++depth;
  }
  for (std::size_t w = 0; w < words_; ++w) {
    for (std::uint64_t left = alive[w]; left != 0; left &= left - 1) {
      (*matched)[w * 64 + static_cast<std::size_t>(std::countr_zero(left))] = depth;
    }
  }
}

std::int64_t KvBlockIndex::blocks_on(int replica) const {
  return static_cast<std::int64_t>(per_replica_[static_cast<std::size_t>(replica)].lru.size());
}

}  // namespace tessera::serve
