// Prompts that stand for an LLM trace's requests, for replaying a trace live (`tessera bench
// serving`): block j of a request is made of tokens derived from its hash id alone, so two
// requests share a block's chained hash (serve/block_hash.h, as the gateway and the engines
// hash prompts) exactly when the trace gives them the same hash-id prefix. Pure.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/trace/llm_trace.h"

namespace tessera {

// The prompt's token ids (each < 2^31) for request `index` of a trace with `block_tokens`-token
// hash ids (0: none; every token then comes from the index, and nothing is shared).
std::vector<std::int32_t> ReplayPromptTokens(const LlmRequest& request, std::size_t index,
                                             int block_tokens);

// The trace as the simulator is to see a replay of it: each request's block hashes are the
// chained hashes of its replay prompt over `hash_block_tokens` (full blocks only, as the engines
// and the gateway hash them), so simulated and live replicas cache the very same blocks.
LlmTrace ReplayTraceForSim(const LlmTrace& trace, int hash_block_tokens);

}  // namespace tessera
