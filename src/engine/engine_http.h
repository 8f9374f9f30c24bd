// The simulated engine's OpenAI-compatible HTTP API (cpp-httplib), in front of an EngineRunner:
//   POST /v1/completions, POST /v1/chat/completions (JSON, or SSE with "stream": true)
//   GET  /v1/models, GET /health, GET /metrics (vLLM's metric names, label engine="simulated")
//   GET  /v1/kv_events (SSE: the KV cache's BlockStored / BlockRemoved / AllBlocksCleared
//        events, a snapshot first; docs/serving.md describes the stream)
// Bad requests get an OpenAI error object naming the field (400); prompts longer than the
// model's context are refused (400, code context_length_exceeded); a full queue is shed (503).
#pragma once

#include <string>

#include "engine/engine_runner.h"

namespace httplib {
class Server;
}

namespace tessera::engine {

struct EngineHttpInfo {
  std::string model;         // what /v1/models lists and requests must name
  std::string profile_name;  // the engine profile, for /v1/models and the metrics
};

// Registers the API's handlers on `server`. `runner` and `info` must outlive it.
void RegisterEngineApi(httplib::Server& server, EngineRunner& runner, const EngineHttpInfo& info);

}  // namespace tessera::engine
