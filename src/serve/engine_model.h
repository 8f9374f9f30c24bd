// The performance model of one inference engine replica: continuous batching with chunked
// prefill (vLLM v1's scheduler), prefill cost per uncached token, decode step time as a
// function of batch size and context, and a paged KV cache (KvCache) with prefix reuse, LRU
// eviction and an optional host tier reloaded over PCIe. Time is not kept here: the caller runs
// one step at a time (BeginStep, then FinishStep after the duration it returned), on the
// simulator's virtual clock or on the wall clock. Not thread-safe; deterministic.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "core/engine_profile.h"
#include "serve/block_hash.h"
#include "serve/kv_cache.h"
#include "serve/replica_load.h"

namespace tessera::serve {

struct EngineRequest {
  std::int64_t id = 0;
  std::vector<BlockHash> blocks;  // chained hashes of the prompt's blocks (may be fewer)
  std::int64_t prompt_tokens = 0;
  std::int64_t output_tokens = 1;
};

struct TokenOutput {
  std::int64_t id = 0;
  bool first = false;  // the first output token (its prefill is complete)
  bool last = false;   // the request is finished
};

// A request's prompt tokens served from cache, known when it is admitted.
struct Admission {
  std::int64_t id = 0;
  std::int64_t gpu_hit_tokens = 0;
  std::int64_t host_hit_tokens = 0;
};

struct StepOutcome {
  std::vector<Admission> admitted;
  std::vector<TokenOutput> tokens;
};

// Step time in microseconds, given what the step computes (the profile's formula).
double StepMicros(const EngineProfile& p, std::int64_t decode_sequences,
                  std::int64_t context_tokens, std::int64_t prefill_tokens,
                  double prefill_attention_ktoken_tokens, std::int64_t reload_bytes);

class EngineReplica {
 public:
  // REQUIRES: block_tokens > 0, gpu_blocks > 0, host_blocks >= 0.
  EngineReplica(const EngineProfile& profile, int block_tokens, std::int64_t gpu_blocks,
                std::int64_t host_blocks);

  // Queues `request` for admission. False (and nothing queued) when it can never run here: its
  // prompt and output exceed the model's context or the whole KV cache.
  bool Enqueue(EngineRequest request);
  bool idle() const { return running_.empty() && waiting_.empty(); }
  bool stepping() const { return stepping_; }
  std::int32_t running_count() const { return static_cast<std::int32_t>(running_.size()); }

  // Plans the next iteration (admits what fits) and returns its duration in microseconds;
  // 0 when there is nothing to run. REQUIRES: !stepping().
  std::int64_t BeginStep();
  // Applies the planned iteration: the tokens it produced, the requests it admitted.
  // REQUIRES: stepping().
  StepOutcome FinishStep();

  ReplicaLoad Load() const;
  std::vector<KvEvent> TakeKvEvents() { return cache_.TakeEvents(); }
  const KvCache& cache() const { return cache_; }
  int block_tokens() const { return block_tokens_; }

 private:
  struct Sequence {
    EngineRequest request;
    std::vector<BlockHash> pinned;
    std::int64_t fresh = 0;     // anonymous blocks it holds
    std::int64_t computed = 0;  // prompt tokens in the cache (hits + prefilled)
    std::int64_t hit_blocks = 0;
    std::int64_t generated = 0;
    std::int64_t chunk = 0;  // prompt tokens this step prefills
    bool decoding = false;   // this step produces a token for it
  };
  struct Waiting {
    EngineRequest request;
    std::int64_t estimated_uncached = 0;
  };
  bool Admit(Waiting& w, StepOutcome* outcome, std::int64_t* reload_bytes);
  std::int64_t BlocksFor(std::int64_t tokens) const {
    return (tokens + block_tokens_ - 1) / block_tokens_;
  }

  EngineProfile profile_;
  int block_tokens_;
  KvCache cache_;
  std::deque<Waiting> waiting_;
  std::vector<Sequence> running_;  // admission order
  std::int64_t waiting_prefill_tokens_ = 0;
  bool stepping_ = false;
  StepOutcome planned_;
};

}  // namespace tessera::serve
