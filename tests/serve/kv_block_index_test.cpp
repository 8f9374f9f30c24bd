#include "serve/kv_block_index.h"

#include <gtest/gtest.h>

#include <vector>

#include "serve/block_hash.h"

namespace tessera::serve {
namespace {

std::vector<std::int32_t> Match(const KvBlockIndex& index, const std::vector<BlockHash>& blocks) {
  std::vector<std::int32_t> m;
  index.MatchPrefix(blocks, &m);
  return m;
}

TEST(BlockHash, ChainsOverThePrefix) {
  const std::vector<std::int32_t> a{1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<std::int32_t> b{1, 2, 3, 4, 9, 9, 9, 9};
  const auto ha = ChainBlockHashes(a, 4);  // two full blocks; the 9th token is not hashed
  const auto hb = ChainBlockHashes(b, 4);
  ASSERT_EQ(ha.size(), 2u);
  ASSERT_EQ(hb.size(), 2u);
  EXPECT_EQ(ha[0], hb[0]);  // same first block
  EXPECT_NE(ha[1], hb[1]);
  // Block 2 of a prompt whose first block differs differs too, even with equal tokens.
  const std::vector<std::int32_t> c{0, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_NE(ChainBlockHashes(c, 4)[1], ha[1]);
  EXPECT_EQ(ChainBlockHashes(a, 4), ha);  // deterministic
}

TEST(KvBlockIndex, LongestPrefixPerReplica) {
  KvBlockIndex index(3);
  index.Stored(0, std::vector<BlockHash>{10, 11, 12});
  index.Stored(1, std::vector<BlockHash>{10, 11});
  index.Stored(2, std::vector<BlockHash>{11, 12});  // no block 10: no prefix at all
  EXPECT_EQ(Match(index, {10, 11, 12, 13}), (std::vector<std::int32_t>{3, 2, 0}));
  EXPECT_EQ(Match(index, {99}), (std::vector<std::int32_t>{0, 0, 0}));
  EXPECT_EQ(index.blocks_on(0), 3);
  EXPECT_EQ(index.distinct_blocks(), 3u);
}

TEST(KvBlockIndex, EventsCorrectTheIndex) {
  KvBlockIndex index(2);
  index.Stored(0, std::vector<BlockHash>{1, 2, 3});
  index.Stored(1, std::vector<BlockHash>{1, 2, 3});
  index.Removed(0, std::vector<BlockHash>{2, 77});  // 77 unknown: ignored
  EXPECT_EQ(Match(index, {1, 2, 3}), (std::vector<std::int32_t>{1, 3}));
  index.Cleared(1);
  EXPECT_EQ(Match(index, {1, 2, 3}), (std::vector<std::int32_t>{1, 0}));
  EXPECT_EQ(index.blocks_on(1), 0);
  // Replica 0 still holds 1 and 3; block 2 is held by nobody and gone from the index.
  EXPECT_EQ(index.distinct_blocks(), 2u);
}

TEST(KvBlockIndex, CapacityForgetsLeastRecentlyRouted) {
  KvBlockIndex index(1, 3);
  index.Stored(0, std::vector<BlockHash>{1, 2, 3});
  index.Stored(0, std::vector<BlockHash>{1});     // 1 is the most recent now: order 1, 3, 2
  index.Stored(0, std::vector<BlockHash>{4, 5});  // forgets 2, then 3
  EXPECT_EQ(index.blocks_on(0), 3);
  EXPECT_EQ(Match(index, {1, 2}), (std::vector<std::int32_t>{1}));
  EXPECT_EQ(Match(index, {4, 5}), (std::vector<std::int32_t>{2}));
  EXPECT_EQ(Match(index, {3}), (std::vector<std::int32_t>{0}));
}

TEST(KvBlockIndex, ManyReplicasAcrossBitsetWords) {
  KvBlockIndex index(130);
  index.Stored(0, std::vector<BlockHash>{7});
  index.Stored(64, std::vector<BlockHash>{7, 8});
  index.Stored(129, std::vector<BlockHash>{7, 8, 9});
  const auto m = Match(index, {7, 8, 9});
  EXPECT_EQ(m[0], 1);
  EXPECT_EQ(m[64], 2);
  EXPECT_EQ(m[129], 3);
  EXPECT_EQ(m[1], 0);
  EXPECT_EQ(m[128], 0);
}

}  // namespace
}  // namespace tessera::serve
