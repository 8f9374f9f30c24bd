#include "serve/engine_block_keys.h"

#include <algorithm>
#include <span>

namespace tessera::serve {

EngineBlockKeys::EngineBlockKeys(int block_tokens, std::size_t max_keys)
    : block_tokens_(block_tokens), max_keys_(max_keys) {}

std::int64_t EngineBlockKeys::Translate(const EngineKvEvent& e, std::vector<KvEvent>* out) {
  switch (e.kind) {
    case EngineKvEvent::Kind::kCleared:
      key_of_.clear();
      out->push_back({KvEvent::Kind::kCleared, 0});
      return 0;
    case EngineKvEvent::Kind::kStored:
      return agreement_ == Agreement::kDisagrees ? 0 : Stored(e, out);
    case EngineKvEvent::Kind::kRemoved: {
      if (!e.gpu_tier || agreement_ == Agreement::kDisagrees) return 0;
      std::int64_t unknown = 0;
      for (std::uint64_t h : e.block_hashes) {
        auto it = key_of_.find(h);
        if (it == key_of_.end()) {
          ++unknown;
          continue;
        }
        out->push_back({KvEvent::Kind::kRemoved, it->second});
        key_of_.erase(it);
      }
      return unknown;
    }
  }
  return 0;
}

std::int64_t EngineBlockKeys::Stored(const EngineKvEvent& e, std::vector<KvEvent>* out) {
  if (!e.gpu_tier) return 0;
  const auto blocks = static_cast<std::int64_t>(e.block_hashes.size());
  const std::size_t size = static_cast<std::size_t>(block_tokens_);
  BlockHash parent = 0;
  if (e.parent_hash) {
    auto it = key_of_.find(*e.parent_hash);
    if (it == key_of_.end())
      return blocks;  // a chain we cannot place: keying it as a root is wrong
    parent = it->second;
  }
  if (e.adapter || e.block_size != block_tokens_ ||
      e.token_ids.size() < e.block_hashes.size() * size) {
    return blocks;
  }
  if (key_of_.size() + e.block_hashes.size() > max_keys_) {
    // Removals were lost (the mapping outgrew any cache): start over from a clean replica view.
    key_of_.clear();
    out->push_back({KvEvent::Kind::kCleared, 0});
    if (e.parent_hash) return blocks;
  }
  const std::span<const std::int32_t> tokens(e.token_ids);
  for (std::size_t i = 0; i < e.block_hashes.size(); ++i) {
    parent = ChainBlockHash(parent, tokens.subspan(i * size, size));
    key_of_[e.block_hashes[i]] = parent;
    out->push_back({KvEvent::Kind::kStored, parent});
  }
  return 0;
}

std::vector<KvEvent> EngineBlockKeys::Observe(std::int64_t stored, std::int64_t already_held) {
  std::vector<KvEvent> retract;
  if (agreement_ != Agreement::kUnknown) return retract;
  if (already_held > 0) {
    agreement_ = Agreement::kAgrees;
    return retract;
  }
  unconfirmed_ += stored;
  if (unconfirmed_ < kAgreementWindow) return retract;
  agreement_ = Agreement::kDisagrees;
  // Sorted, so the retraction does not depend on the hash map's order.
  for (const auto& [engine, key] : key_of_) retract.push_back({KvEvent::Kind::kRemoved, key});
  std::sort(retract.begin(), retract.end(),
            [](const KvEvent& a, const KvEvent& b) { return a.block < b.block; });
  key_of_.clear();
  return retract;
}

}  // namespace tessera::serve
