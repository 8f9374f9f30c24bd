// An engine's KV events in the router's own block keys. vLLM names the blocks in its events by
// its own hashes (SHA-256 or Python's hash() over the parent's hash, the block's token ids and
// extra keys such as a LoRA name or cache salt, seeded per process unless PYTHONHASHSEED is set),
// which a router cannot compute from a prompt. As llm-d's indexer does, each stored block is
// re-keyed from what the event carries: its key is ChainBlockHash(key of its parent, its token
// ids), the parent's key found through the engine hash it was stored under, and that engine
// hash -> key mapping resolves later removals. So the keys agree with the router's own
// ChainBlockHashes of a prompt exactly when the router's token ids are the engine's (the
// simulated engine's). Whether they do is checked, not assumed: a stored block the router had
// already placed on that replica by routing a request there shows that the engine's token ids
// are the router's; kAgreementWindow stored blocks without one show that they are not (a real
// vLLM, whose tokenizer the gateway does not share), and from then on only "all cleared" is
// used, the keys stored so far retracted (docs/serving.md). Pure and deterministic.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "serve/block_hash.h"
#include "serve/kv_cache.h"

namespace tessera::serve {

// One event as the engine sends it (vLLM's BlockStored / BlockRemoved / AllBlocksCleared).
struct EngineKvEvent {
  enum class Kind { kStored, kRemoved, kCleared };
  Kind kind = Kind::kStored;
  std::vector<std::uint64_t> block_hashes;   // the engine's, a chain for kStored
  std::optional<std::uint64_t> parent_hash;  // kStored: the engine hash of the first's parent
  std::vector<std::int32_t> token_ids;       // kStored: block_size tokens per block
  std::int32_t block_size = 0;               // kStored
  bool gpu_tier = true;                      // medium absent or "GPU" (not an offload tier)
  bool adapter = false;                      // kStored under a LoRA adapter (keyed apart)
};

class EngineBlockKeys {
 public:
  // REQUIRES: block_tokens > 0, max_keys > 0. max_keys bounds the mapping: an engine holds no
  // more blocks than its cache, so more keys mean lost removals; the mapping then starts over.
  EngineBlockKeys(int block_tokens, std::size_t max_keys);

  // Appends `e` in router keys to `out`; returns how many of its blocks could not be keyed (a
  // block size other than the router's, token ids missing, a parent never seen, an adapter's
  // blocks, an unknown removal). Blocks of other tiers than the GPU are left out, not counted.
  std::int64_t Translate(const EngineKvEvent& e, std::vector<KvEvent>* out);

  enum class Agreement { kUnknown, kAgrees, kDisagrees };
  static constexpr std::int64_t kAgreementWindow = 256;
  // What the router made of the blocks the last Translate stored: `already_held` of `stored`
  // were placed there by routing. Returns, when that settles the keys to disagree, removals of
  // every key stored so far (to apply like any other events); otherwise nothing.
  std::vector<KvEvent> Observe(std::int64_t stored, std::int64_t already_held);
  Agreement agreement() const { return agreement_; }

  std::size_t size() const { return key_of_.size(); }

 private:
  std::int64_t Stored(const EngineKvEvent& e, std::vector<KvEvent>* out);

  int block_tokens_;
  std::size_t max_keys_;
  std::unordered_map<std::uint64_t, BlockHash> key_of_;  // engine hash -> router key
  Agreement agreement_ = Agreement::kUnknown;
  std::int64_t unconfirmed_ = 0;  // blocks stored while kUnknown
};

}  // namespace tessera::serve
