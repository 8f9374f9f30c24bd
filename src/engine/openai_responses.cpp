#include "engine/openai_responses.h"

namespace tessera::engine {

using Json = nlohmann::json;

namespace {

bool IsChat(const ResponseIdentity& who) {
  return who.endpoint == OpenAiEndpoint::kChatCompletions;
}

Json Header(const ResponseIdentity& who, const char* object) {
  return {{"id", who.id},
          {"object", object},
          {"created", who.created},
          {"model", who.model},
          {"system_fingerprint", kSystemFingerprint}};
}

}  // namespace

std::string OutputTokenText(std::int64_t index) { return " w" + std::to_string(index); }

Json UsageJson(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

Json CompletionJson(const ResponseIdentity& who, const std::string& text, const Usage& usage) {
  Json out = Header(who, IsChat(who) ? "chat.completion" : "text_completion");
  Json choice = {{"index", 0}, {"finish_reason", "length"}, {"logprobs", nullptr}};
  if (IsChat(who)) {
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  } else {
    choice["text"] = text;
  }
  out["choices"] = Json::array({choice});
  out["usage"] = UsageJson(usage);
  return out;
}

Json ChunkJson(const ResponseIdentity& who, const std::string& text, bool first, bool finish) {
  Json out = Header(who, IsChat(who) ? "chat.completion.chunk" : "text_completion");
  Json choice = {{"index", 0},
                 {"logprobs", nullptr},
                 {"finish_reason", finish ? Json("length") : Json(nullptr)}};
  if (IsChat(who)) {
    Json delta = {{"content", text}};
    if (first) delta["role"] = "assistant";
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  out["choices"] = Json::array({choice});
  return out;
}

Json UsageChunkJson(const ResponseIdentity& who, const Usage& usage) {
  Json out = Header(who, IsChat(who) ? "chat.completion.chunk" : "text_completion");
  out["choices"] = Json::array();
  out["usage"] = UsageJson(usage);
  return out;
}

}  // namespace tessera::engine
