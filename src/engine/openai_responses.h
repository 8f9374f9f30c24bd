// The OpenAI response bodies the simulated engine sends, in the shapes OpenAI and vLLM use:
// a whole completion (`text_completion` / `chat.completion`), a streamed chunk
// (`text_completion` / `chat.completion.chunk`) and the usage object. The simulated engine's
// output token k is the word " w<k>"; every response names the engine as simulated in
// `system_fingerprint`. Pure.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "spec/openai_request.h"

namespace tessera::engine {

inline constexpr const char* kSystemFingerprint = "tessera-engine-sim (simulated)";

struct ResponseIdentity {
  std::string id;  // "cmpl-<n>" / "chatcmpl-<n>"
  std::string model;
  std::int64_t created = 0;  // unix seconds
  OpenAiEndpoint endpoint = OpenAiEndpoint::kCompletions;
};

struct Usage {
  std::int64_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
};

std::string OutputTokenText(std::int64_t index);
nlohmann::json UsageJson(const Usage& u);
nlohmann::json CompletionJson(const ResponseIdentity& who, const std::string& text,
                              const Usage& usage);
// One chunk carrying `text`; `finish` adds finish_reason "length"; `first` (chat) adds the role.
nlohmann::json ChunkJson(const ResponseIdentity& who, const std::string& text, bool first,
                         bool finish);
// The closing chunk with usage and no choices (stream_options.include_usage).
nlohmann::json UsageChunkJson(const ResponseIdentity& who, const Usage& usage);

}  // namespace tessera::engine
