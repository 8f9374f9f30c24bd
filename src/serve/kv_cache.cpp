#include "serve/kv_cache.h"

#include <utility>

namespace tessera::serve {

KvCache::KvCache(std::int64_t gpu_blocks, std::int64_t host_blocks)
    : capacity_(gpu_blocks), host_capacity_(host_blocks) {}

KvCache::Match KvCache::Find(std::span<const BlockHash> blocks) const {
  Match m;
  std::size_t i = 0;
  while (i < blocks.size() && cached_.contains(blocks[i])) ++i;
  m.gpu = static_cast<std::int32_t>(i);
  while (i < blocks.size() && host_.contains(blocks[i])) ++i;
  m.host = static_cast<std::int32_t>(i) - m.gpu;
  return m;
}

void KvCache::Pin(BlockHash block) {
  Entry& e = cached_.at(block);
  if (e.refs++ == 0) {
    evictable_.erase(e.lru);
    ++pinned_;
  }
}

void KvCache::Offload(BlockHash block) {
  if (host_capacity_ == 0) return;
  if (auto it = host_.find(block); it != host_.end()) {
    host_lru_.splice(host_lru_.begin(), host_lru_, it->second);
    return;
  }
  host_lru_.push_front(block);
  host_.emplace(block, host_lru_.begin());
  if (static_cast<std::int64_t>(host_lru_.size()) > host_capacity_) {
    host_.erase(host_lru_.back());
    host_lru_.pop_back();
  }
}

void KvCache::MakeRoom(std::int64_t blocks) {
  const auto free = [&] {
    return capacity_ - anonymous_ - static_cast<std::int64_t>(cached_.size());
  };
  while (free() < blocks && !evictable_.empty()) {
    const BlockHash victim = evictable_.back();
    evictable_.pop_back();
    cached_.erase(victim);
    events_.push_back({KvEvent::Kind::kRemoved, victim});
    Offload(victim);
  }
}

void KvCache::Acquire(std::span<const BlockHash> gpu_hits, std::span<const BlockHash> host_hits,
                      std::int64_t fresh, std::vector<BlockHash>* pinned) {
  for (BlockHash b : gpu_hits) {
    Pin(b);
    pinned->push_back(b);
  }
  const auto reloads = static_cast<std::int64_t>(host_hits.size());
  MakeRoom(reloads + fresh);
  for (BlockHash b : host_hits) {
    cached_.emplace(b, Entry{1, {}});
    ++pinned_;
    events_.push_back({KvEvent::Kind::kStored, b});
    pinned->push_back(b);
  }
  anonymous_ += fresh;
}

std::int64_t KvCache::Publish(std::span<const BlockHash> blocks, std::vector<BlockHash>* pinned) {
  std::int64_t used = 0;
  for (BlockHash b : blocks) {
    if (cached_.contains(b)) continue;  // computed twice; this copy stays anonymous
    cached_.emplace(b, Entry{1, {}});
    --anonymous_;
    ++pinned_;
    ++used;
    events_.push_back({KvEvent::Kind::kStored, b});
    pinned->push_back(b);
  }
  return used;
}

void KvCache::Release(std::span<const BlockHash> pinned, std::int64_t anonymous) {
  for (BlockHash b : pinned) {
    Entry& e = cached_.at(b);
    if (--e.refs == 0) {
      evictable_.push_front(b);
      e.lru = evictable_.begin();
      --pinned_;
    }
  }
  anonymous_ -= anonymous;
}

}  // namespace tessera::serve
