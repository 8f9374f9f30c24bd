// The reference a router is measured against: one LRU cache of blocks shared by all replicas,
// fed every request in arrival order. Its prefix hit rate at a total capacity is the best a
// router could hope for with that much KV memory split N ways; its unlimited hit rate is the
// trace's own reuse. Pure; deterministic.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/trace/llm_trace.h"

namespace tessera {

// Prompt tokens served from a global LRU cache of `capacity_blocks` (0 = unlimited) ÷ prompt
// tokens, over `requests` in order.
double GlobalLruHitRate(const std::vector<LlmRequest>& requests, int block_tokens,
                        std::int64_t capacity_blocks);

// The smallest capacity (blocks) at which the global LRU reaches `fraction` of its unlimited
// hit rate (--kv-blocks-per-replica auto takes a 1/N share of it). At least 1.
std::int64_t CapacityForHitRateFraction(const std::vector<LlmRequest>& requests, int block_tokens,
                                        double fraction);

}  // namespace tessera
