#include "sim/serving/replay_prompts.h"

#include "serve/block_hash.h"

namespace tessera {

namespace {

// SplitMix64's finaliser: well-mixed token ids from (seed, position).
std::uint64_t Mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::int32_t TokenOf(std::uint64_t seed, std::int64_t k) {
  return static_cast<std::int32_t>(Mix(seed * 0x100000001b3ULL + static_cast<std::uint64_t>(k)) &
                                   0x7fffffff);
}

}  // namespace

std::vector<std::int32_t> ReplayPromptTokens(const LlmRequest& request, std::size_t index,
                                             int block_tokens) {
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(request.prompt_tokens));
  for (std::int64_t k = 0; k < request.prompt_tokens; ++k) {
    const std::int64_t block = block_tokens > 0 ? k / block_tokens : -1;
    if (block >= 0 && block < static_cast<std::int64_t>(request.block_hashes.size())) {
      // Seeds of hash ids and of request indexes never meet: the top bit tells them apart.
      tokens[static_cast<std::size_t>(k)] =
          TokenOf(request.block_hashes[static_cast<std::size_t>(block)] & ~(1ULL << 63),
                  k - block * block_tokens);
    } else {
      tokens[static_cast<std::size_t>(k)] = TokenOf((1ULL << 63) | index, k);
    }
  }
  return tokens;
}

LlmTrace ReplayTraceForSim(const LlmTrace& trace, int hash_block_tokens) {
  LlmTrace out;
  out.format = trace.format;
  out.block_tokens = hash_block_tokens;
  out.requests.reserve(trace.requests.size());
  for (std::size_t i = 0; i < trace.requests.size(); ++i) {
    LlmRequest r = trace.requests[i];
    r.block_hashes =
        serve::ChainBlockHashes(ReplayPromptTokens(r, i, trace.block_tokens), hash_block_tokens);
    out.requests.push_back(std::move(r));
  }
  return out;
}

}  // namespace tessera
