// The live half of `tessera bench serving`: an LLM trace slice sent through tessera-gateway at
// its (scaled) arrival times, with prompts whose KV blocks stand for the trace's blocks
// (sim/serving/replay_prompts.h).
// Each request streams; its TTFT is the time to the first token event, its cache hit the
// `cached_tokens` the engine reports in the final usage chunk.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/serving/replay_prompts.h"
#include "sim/trace/llm_trace.h"

namespace tessera::cli {

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

// Sends every request of `trace` (one thread each, started at its due time, none before the one
// ahead of it in the trace) and waits for all.
std::vector<ReplayOutcome> ReplayThroughGateway(const LlmTrace& trace, int block_tokens,
                                                const ReplayOptions& options);

}  // namespace tessera::cli
