#include "serve/prompt_tokens.h"

#include <gtest/gtest.h>

#include "serve/block_hash.h"

namespace tessera::serve {
namespace {

TEST(PromptTokens, NumbersAreTheirOwnIdsOtherWordsHash) {
  EXPECT_EQ(TokenizePrompt("  17 4\n\t99 "), (std::vector<std::int32_t>{17, 4, 99}));
  EXPECT_TRUE(TokenizePrompt(" \n ").empty());
  // 2^31 does not fit: it is hashed like any word, into 31 bits.
  const auto big = TokenizePrompt("2147483648");
  ASSERT_EQ(big.size(), 1u);
  EXPECT_NE(big[0], 0);
  EXPECT_GE(big[0], 0);
  // FNV-1a of "a" (0xe40c292c) folded to 31 bits.
  EXPECT_EQ(TokenizePrompt("a"), (std::vector<std::int32_t>{0x640c292c}));
  EXPECT_EQ(TokenizePrompt("hello world"), TokenizePrompt("hello   world"));
}

TEST(PromptTokens, SharedWordsGiveSharedBlocks) {
  // Two prompts with the same first 16 words share their first block's hash, not the second's.
  std::string common, a, b;
  for (int i = 0; i < 16; ++i) common += "w" + std::to_string(i) + " ";
  for (int i = 0; i < 16; ++i) a += "a" + std::to_string(i) + " ";
  for (int i = 0; i < 16; ++i) b += "b" + std::to_string(i) + " ";
  const auto ha = ChainBlockHashes(TokenizePrompt(common + a), 16);
  const auto hb = ChainBlockHashes(TokenizePrompt(common + b), 16);
  ASSERT_EQ(ha.size(), 2u);
  ASSERT_EQ(hb.size(), 2u);
  EXPECT_EQ(ha[0], hb[0]);
  EXPECT_NE(ha[1], hb[1]);
}

}  // namespace
}  // namespace tessera::serve
