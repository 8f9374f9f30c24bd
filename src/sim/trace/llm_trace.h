// LLM serving traces: one request per record with its arrival, prompt and output lengths and,
// where the trace has them, the chained hashes of its prompt's blocks.
//   mooncake  JSON lines: timestamp (ms), input_length, output_length, hash_ids (one per
//             512-token block, chained; ../shared/traces/mooncake-2025/)
//   azure     CSV TIMESTAMP,ContextTokens,GeneratedTokens (Azure LLM inference trace 2023;
//             no block hashes: no prefix is shared)
// The format is recognised from the file's first bytes. Arrivals are made relative to the
// first request and sorted (stable). Errors name FILE:LINE and the field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace tessera {

struct LlmRequest {
  std::int64_t arrival_us = 0;
  std::int64_t prompt_tokens = 0;
  std::int64_t output_tokens = 0;
  std::vector<std::uint64_t> block_hashes;
};

struct LlmTrace {
  std::string format;    // mooncake | azure
  int block_tokens = 0;  // tokens per hashed block (512 for mooncake; 0: no hashes)
  std::vector<LlmRequest> requests;
};

// `limit` > 0 reads only the first `limit` requests (slices for tests and quick runs).
Result<LlmTrace> ReadLlmTrace(const std::string& path, std::int64_t limit = 0);

}  // namespace tessera
