#include "serve/block_hash.h"

namespace tessera::serve {

namespace {

// SplitMix64's finaliser: a cheap, well-mixed 64-bit permutation.
std::uint64_t Mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace

BlockHash ChainBlockHash(BlockHash parent, std::span<const std::int32_t> tokens) {
  std::uint64_t h = Mix(parent ^ 0x9E3779B97F4A7C15ULL);
  for (std::int32_t t : tokens) {
    h = Mix(h ^ static_cast<std::uint32_t>(t));
  }
  // Mixing in the length keeps a block from colliding with its own prefix.
  return Mix(h + tokens.size());
}

std::vector<BlockHash> ChainBlockHashes(std::span<const std::int32_t> tokens, int block_tokens) {
  std::vector<BlockHash> out;
  const std::size_t size = static_cast<std::size_t>(block_tokens);
  out.reserve(tokens.size() / size);
  BlockHash parent = 0;
  for (std::size_t at = 0; at + size <= tokens.size(); at += size) {
    parent = ChainBlockHash(parent, tokens.subspan(at, size));
    out.push_back(parent);
  }
  return out;
}

}  // namespace tessera::serve
