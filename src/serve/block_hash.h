// Prompt blocks named by chained hashes, as vLLM's prefix cache and Mooncake's traces name
// them: block i's hash covers block i-1's hash and block i's tokens, so equal hashes mean an
// equal prefix up to and including that block. Only full blocks get a hash (a partial last
// block is never shared). Pure and deterministic: the same tokens give the same hashes on
// every platform.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tessera::serve {

using BlockHash = std::uint64_t;

inline constexpr int kDefaultBlockTokens = 16;    // vLLM's default block size
inline constexpr int kMooncakeBlockTokens = 512;  // the Mooncake traces' hash_ids

// The hash of a block given its parent's hash (0 for the first block) and its tokens.
BlockHash ChainBlockHash(BlockHash parent, std::span<const std::int32_t> tokens);

// Hashes of the full blocks of `tokens`, each chained to the one before.
// REQUIRES: block_tokens > 0.
std::vector<BlockHash> ChainBlockHashes(std::span<const std::int32_t> tokens, int block_tokens);

}  // namespace tessera::serve
