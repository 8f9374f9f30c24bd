#include "serve/kv_block_index.h"

#include <algorithm>
#include <bit>

namespace tessera::serve {

namespace {
std::uint64_t Bit(int replica) { return std::uint64_t{1} << (replica % 64); }
}  // namespace

KvBlockIndex::KvBlockIndex(int replicas, std::int64_t capacity_per_replica)
    : replicas_(replicas),
      words_(static_cast<std::size_t>((replicas + 63) / 64)),
      capacity_(capacity_per_replica),
      per_replica_(capacity_per_replica > 0 ? static_cast<std::size_t>(replicas) : 0),
      bounded_(static_cast<std::size_t>(replicas), capacity_per_replica > 0),
      count_(static_cast<std::size_t>(replicas), 0) {}

bool KvBlockIndex::SetHolder(BlockHash block, int replica) {
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
  std::uint64_t& word = Holders(slot)[replica / 64];
  if ((word & Bit(replica)) != 0) return false;
  word |= Bit(replica);
  ++holder_count_[slot];
  ++count_[static_cast<std::size_t>(replica)];
  return true;
}

bool KvBlockIndex::ClearHolder(BlockHash block, int replica) {
  auto it = slot_of_.find(block);
  if (it == slot_of_.end()) return false;
  const std::uint32_t slot = it->second;
  std::uint64_t& word = Holders(slot)[replica / 64];
  if ((word & Bit(replica)) == 0) return false;
  word &= ~Bit(replica);
  --count_[static_cast<std::size_t>(replica)];
  if (--holder_count_[slot] == 0) {
    free_slots_.push_back(slot);
    slot_of_.erase(it);
  }
  return true;
}

std::int64_t KvBlockIndex::Stored(int replica, std::span<const BlockHash> blocks) {
  std::int64_t held = 0;
  if (capacity_ == 0) {
    for (BlockHash b : blocks) held += SetHolder(b, replica) ? 0 : 1;
    return held;
  }
  ReplicaBlocks& r = per_replica_[static_cast<std::size_t>(replica)];
  for (BlockHash b : blocks) {
    if (auto it = r.at.find(b); it != r.at.end()) {
      r.lru.splice(r.lru.begin(), r.lru, it->second);
      ++held;
      continue;
    }
    r.lru.push_front(b);
    r.at.emplace(b, r.lru.begin());
    SetHolder(b, replica);
  }
  while (bounded_[static_cast<std::size_t>(replica)] &&
         static_cast<std::int64_t>(r.lru.size()) > capacity_) {
    const BlockHash oldest = r.lru.back();
    r.lru.pop_back();
    r.at.erase(oldest);
    ClearHolder(oldest, replica);
  }
  return held;
}

void KvBlockIndex::Removed(int replica, std::span<const BlockHash> blocks) {
  for (BlockHash b : blocks) {
    if (!ClearHolder(b, replica) || capacity_ == 0) continue;
    ReplicaBlocks& r = per_replica_[static_cast<std::size_t>(replica)];
    auto it = r.at.find(b);
    r.lru.erase(it->second);
    r.at.erase(it);
  }
}

void KvBlockIndex::Cleared(int replica) {
  if (capacity_ > 0) {
    ReplicaBlocks& r = per_replica_[static_cast<std::size_t>(replica)];
    for (BlockHash b : r.lru) ClearHolder(b, replica);  // list order: deterministic
    r.lru.clear();
    r.at.clear();
    return;
  }
  // Collect first: clearing may erase entries. The order only decides which slots are reused
  // first, never a decision.
  std::vector<BlockHash> held;
  for (const auto& [block, slot] : slot_of_) {
    if ((Holders(slot)[replica / 64] & Bit(replica)) != 0) held.push_back(block);
  }
  for (BlockHash b : held) ClearHolder(b, replica);
}

void KvBlockIndex::SetBounded(int replica, bool bounded) {
  bounded_[static_cast<std::size_t>(replica)] = bounded && capacity_ > 0;
}

bool KvBlockIndex::bounded(int replica) const {
  return bounded_[static_cast<std::size_t>(replica)];
}

void KvBlockIndex::MatchPrefix(std::span<const BlockHash> blocks,
                               std::vector<std::int32_t>* matched) const {
  matched->assign(static_cast<std::size_t>(replicas_), 0);
  std::vector<std::uint64_t> alive(words_, ~std::uint64_t{0});
  if (replicas_ % 64 != 0) alive.back() = (std::uint64_t{1} << (replicas_ % 64)) - 1;
  std::int32_t depth = 0;
  for (BlockHash b : blocks) {
    auto it = slot_of_.find(b);
    const std::uint64_t* holders = it == slot_of_.end() ? nullptr : Holders(it->second);
    bool any = false;
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
  return count_[static_cast<std::size_t>(replica)];
}

}  // namespace tessera::serve
