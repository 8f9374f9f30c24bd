// The live half of `tessera bench serving`: an LLM trace slice sent through tessera-gateway at
// its (scaled) arrival times, with prompts built so that their KV blocks stand for the trace's
// blocks: block j of a request is made of tokens derived from its hash id alone, so two requests
// share a block's chained hash exactly when the trace gives them the same hash-id prefix.
// Each request streams; its TTFT is the time to the first token event, its cache hit the
// `cached_tokens` the engine reports in the final usage chunk.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/trace/llm_trace.h"

namespace tessera::cli {

// The prompt's token ids (each < 2^31) for request `index` of a trace with `block_tokens`-token
// hash ids (0: none; every token then comes from the index, nothing is shared).
std::vector<std::int32_t> ReplayPromptTokens(const LlmRequest& request, std::size_t index,
                                             int block_tokens);

// The slice as the simulator is to see it: each request's block hashes are the chained hashes
// of its replay prompt over `hash_block_tokens` (full blocks only, as the engines and the
// gateway hash them), so the simulated and the live replicas cache the very same blocks.
LlmTrace ReplayTraceForSim(const LlmTrace& trace, int hash_block_tokens);

struct ReplayOptions {
  std::string gateway_url;  // http://127.0.0.1:PORT
  std::string model;        // the service's model name
  double rate_scale = 1;    // arrivals / this
  double time_scale = 1;    // wall seconds per modelled second (the engines' --time-scale)
  int timeout_s = 600;      // per request
};

struct ReplayOutcome {
  int status = 0;       // HTTP status (0: no answer)
  double ttft_ms = -1;  // modelled ms (wall ÷ time_scale); -1: no token
  std::int64_t cached_tokens = 0, prompt_tokens = 0, output_tokens = 0;
  double lateness_ms = 0;  // wall ms the send started after its due time
  std::string error;
};

// Sends every request of `trace` (one thread each, started at its due time) and waits for all.
std::vector<ReplayOutcome> ReplayThroughGateway(const LlmTrace& trace, int block_tokens,
                                                const ReplayOptions& options);

}  // namespace tessera::cli
