// The LLM serving trace reader (Mooncake JSON lines, Azure LLM CSV), recognised from the
// file's first bytes. Properties: never crashes or throws; every request read has
// non-negative, sorted arrivals and non-negative token counts.
#include <cstdint>
#include <string>

#include "fuzz/fuzz_support.h"
#include "sim/trace/llm_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = tessera::fuzz::ScratchFile(tessera::fuzz::Text(data, size));
  auto trace = tessera::ReadLlmTrace(path);
  if (!trace) {
    FUZZ_CHECK(!trace.error().message.empty(), "a refusal without a reason");
    return 0;
  }
  std::int64_t last = 0;
  for (const auto& r : trace->requests) {
    FUZZ_CHECK(r.arrival_us >= last, "arrivals not sorted from 0: " + std::to_string(r.arrival_us));
    FUZZ_CHECK(r.prompt_tokens >= 0 && r.output_tokens >= 0, "negative tokens");
    last = r.arrival_us;
  }
  return 0;
}
