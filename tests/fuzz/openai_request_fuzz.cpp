// The OpenAI-compatible request bodies the gateway and tessera-engine-sim take
// (ParseOpenAiRequest); the first byte picks /v1/completions or /v1/chat/completions.
// Properties: never crashes or throws; a refusal is a 4xx with a message.
// fuzz-links: tessera_spec
#include <cstdint>

#include "fuzz/fuzz_support.h"
#include "spec/openai_request.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto endpoint = data[0] % 2 == 0 ? tessera::OpenAiEndpoint::kCompletions
                                         : tessera::OpenAiEndpoint::kChatCompletions;
  auto request = tessera::ParseOpenAiRequest(tessera::fuzz::Text(data + 1, size - 1), endpoint);
  if (!request) {
    FUZZ_CHECK(request.error().http_status >= 400 && request.error().http_status < 500,
               "status " + std::to_string(request.error().http_status));
    FUZZ_CHECK(!request.error().message.empty(), "a refusal without a reason");
  }
  return 0;
}
