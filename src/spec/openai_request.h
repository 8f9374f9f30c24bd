// The OpenAI-compatible request bodies the gateway and the simulated engine accept:
// POST /v1/completions ({model, prompt, max_tokens, stream, ...}) and POST /v1/chat/completions
// ({model, messages: [{role, content}], max_tokens | max_completion_tokens, stream, ...}).
// Parsing validates what serving needs and names the field and the reason on failure, as the
// OpenAI API's error object does (`param`, `message`); fields this server does not use
// (temperature, top_p, stop, ...) are accepted when they have the right JSON type, and ignored.
// Pure: no I/O.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tessera {

inline constexpr std::size_t kMaxOpenAiBodyBytes = 8 << 20;
inline constexpr std::int64_t kMaxOpenAiOutputTokens = 1 << 20;

enum class OpenAiEndpoint { kCompletions, kChatCompletions };

struct OpenAiRequest {
  OpenAiEndpoint endpoint = OpenAiEndpoint::kCompletions;
  std::string model;
  // The prompt: for completions the text (or token ids given as a list of integers); for chat,
  // each message's role and content joined, one message per line ("role: content").
  std::string prompt_text;
  std::vector<std::int32_t> prompt_token_ids;  // set when the prompt was a list of token ids
  bool has_token_ids = false;
  std::int64_t max_tokens = 16;  // OpenAI's completions default
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
};

// An OpenAI-style error: `param` is the offending field ("messages[0].content"), may be empty.
struct OpenAiError {
  int http_status = 400;
  std::string type = "invalid_request_error";
  std::string param;
  std::string message;
  std::string code;
};

// {"error": {"message", "type", "param", "code"}}, as the OpenAI API answers.
nlohmann::json OpenAiErrorJson(const OpenAiError& e);

// Parses and validates a request body for `endpoint`. On failure the error names the field.
std::expected<OpenAiRequest, OpenAiError> ParseOpenAiRequest(std::string_view body,
                                                             OpenAiEndpoint endpoint);

}  // namespace tessera
