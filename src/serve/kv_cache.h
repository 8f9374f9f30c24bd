// The paged KV cache of one simulated replica, with prefix reuse: blocks named by their chained
// hash are shared by every request whose prompt starts with them; a block no running request
// uses stays cached until space is needed, then the least recently used goes first (vLLM's free
// block queue). An optional host-memory tier keeps evicted blocks, from which a later request
// reloads them instead of recomputing them. Every block that enters or leaves the GPU tier is
// reported as a KV event, as vLLM publishes them for routers. Not thread-safe; deterministic.
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "serve/block_hash.h"

namespace tessera::serve {

struct KvEvent {
  enum class Kind { kStored, kRemoved, kCleared };
  Kind kind = Kind::kStored;
  BlockHash block = 0;
};

class KvCache {
 public:
  // REQUIRES: gpu_blocks > 0, host_blocks >= 0.
  KvCache(std::int64_t gpu_blocks, std::int64_t host_blocks);

  struct Match {
    std::int32_t gpu = 0;   // leading blocks cached on the GPU
    std::int32_t host = 0;  // the blocks after those, found in host memory
  };
  Match Find(std::span<const BlockHash> blocks) const;

  // Blocks a request could take now: free ones plus cached ones nobody uses.
  std::int64_t available() const { return capacity_ - anonymous_ - pinned_; }
  std::int64_t capacity() const { return capacity_; }
  // Blocks running requests hold (what vLLM reports as gpu_cache_usage).
  std::int64_t used() const { return anonymous_ + pinned_; }

  // A request's blocks at admission: pins `gpu_hits`, reloads `host_hits` into GPU blocks and
  // takes `fresh` blocks for the rest of its sequence, evicting cached blocks as needed. The
  // hashes it now holds are appended to `pinned`.
  // REQUIRES: available() >= host_hits.size() + fresh; gpu_hits are cached (Find said so).
  void Acquire(std::span<const BlockHash> gpu_hits, std::span<const BlockHash> host_hits,
               std::int64_t fresh, std::vector<BlockHash>* pinned);
  // The request has computed `blocks` (after its hits): each turns one of its fresh blocks into
  // a cached block it pins, unless another request cached it first. Returns the fresh blocks
  // used up that way.
  std::int64_t Publish(std::span<const BlockHash> blocks, std::vector<BlockHash>* pinned);
  // The request finished: its pinned blocks stay cached (most recently used), its anonymous
  // blocks are freed.
  void Release(std::span<const BlockHash> pinned, std::int64_t anonymous);

  std::vector<KvEvent> TakeEvents() { return std::exchange(events_, {}); }

 private:
  struct Entry {
    std::int32_t refs = 0;
    std::list<BlockHash>::iterator lru;  // valid while refs == 0
  };
  void Pin(BlockHash block);
  void MakeRoom(std::int64_t blocks);
  void Offload(BlockHash block);

  std::int64_t capacity_;
  std::int64_t host_capacity_;
  std::int64_t anonymous_ = 0;  // taken by requests, not (yet) named by a hash
  std::int64_t pinned_ = 0;     // cached blocks with refs > 0
  std::unordered_map<BlockHash, Entry> cached_;
  std::list<BlockHash> evictable_;  // cached, refs == 0; most recent first
  std::list<BlockHash> host_lru_;   // most recent first
  std::unordered_map<BlockHash, std::list<BlockHash>::iterator> host_;
  std::vector<KvEvent> events_;
};

}  // namespace tessera::serve
