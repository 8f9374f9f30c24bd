#include "serve/kv_block_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "serve/block_hash.h"
#include "serve/engine_block_keys.h"

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

// An engine's events for a 3-block prompt of 4-token blocks, named by the engine's own hashes
// (101, 102, 103), stored in two events (the second chained to the first by its parent).
std::vector<EngineKvEvent> StoredInTwoParts(const std::vector<std::int32_t>& tokens) {
  EngineKvEvent first{EngineKvEvent::Kind::kStored, {101, 102}};
  first.token_ids.assign(tokens.begin(), tokens.begin() + 8);
  first.block_size = 4;
  EngineKvEvent second{EngineKvEvent::Kind::kStored, {103}, 102};
  second.token_ids.assign(tokens.begin() + 8, tokens.end());
  second.block_size = 4;
  return {first, second};
}

TEST(EngineBlockKeys, StoredBlocksGetTheRoutersKeysAndRemovalsFindThem) {
  const std::vector<std::int32_t> tokens{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const std::vector<BlockHash> router_keys = ChainBlockHashes(tokens, 4);
  EngineBlockKeys keys(4, 100);
  std::vector<KvEvent> out;
  for (const EngineKvEvent& e : StoredInTwoParts(tokens)) EXPECT_EQ(keys.Translate(e, &out), 0);
  ASSERT_EQ(out.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(out[i].kind, KvEvent::Kind::kStored);
    EXPECT_EQ(out[i].block, router_keys[i]);
  }
  out.clear();
  // 999 was never stored: counted, not guessed.
  EXPECT_EQ(keys.Translate({EngineKvEvent::Kind::kRemoved, {102, 999}}, &out), 1);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, KvEvent::Kind::kRemoved);
  EXPECT_EQ(out[0].block, router_keys[1]);
  EXPECT_EQ(keys.size(), 2u);
  out.clear();
  EXPECT_EQ(keys.Translate({EngineKvEvent::Kind::kCleared}, &out), 0);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, KvEvent::Kind::kCleared);
  EXPECT_EQ(keys.size(), 0u);
}

TEST(EngineBlockKeys, BlocksThatCannotBeKeyedAreCountedNotStored) {
  const std::vector<std::int32_t> tokens{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  std::vector<EngineKvEvent> parts = StoredInTwoParts(tokens);
  EngineBlockKeys keys(4, 100);
  std::vector<KvEvent> out;
  EXPECT_EQ(keys.Translate(parts[1], &out), 1);  // its parent was never stored
  EngineKvEvent other_size = parts[0];
  other_size.block_size = 8;
  EXPECT_EQ(keys.Translate(other_size, &out), 2);
  EngineKvEvent adapter = parts[0];
  adapter.adapter = true;
  EXPECT_EQ(keys.Translate(adapter, &out), 2);
  EngineKvEvent short_tokens = parts[0];
  short_tokens.token_ids.pop_back();
  EXPECT_EQ(keys.Translate(short_tokens, &out), 2);
  EngineKvEvent offloaded = parts[0];
  offloaded.gpu_tier = false;  // a CPU tier's copy: not the GPU cache the index describes
  EXPECT_EQ(keys.Translate(offloaded, &out), 0);
  EXPECT_TRUE(out.empty());
  // Past the bound the mapping starts over with the replica cleared.
  EngineBlockKeys small(4, 2);
  EXPECT_EQ(small.Translate(parts[0], &out), 0);
  out.clear();
  EXPECT_EQ(small.Translate(parts[1], &out), 1);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, KvEvent::Kind::kCleared);
}

TEST(EngineBlockKeys, KeysThatNeverMeetARoutedPromptAreRetracted) {
  const std::vector<std::int32_t> tokens{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  EngineBlockKeys agrees(4, 1000);
  std::vector<KvEvent> out;
  agrees.Translate(StoredInTwoParts(tokens)[0], &out);
  EXPECT_TRUE(agrees.Observe(2, 1).empty());
  EXPECT_EQ(agrees.agreement(), EngineBlockKeys::Agreement::kAgrees);

  EngineBlockKeys disagrees(4, 1000);
  std::vector<BlockHash> stored;
  std::vector<KvEvent> retract;
  for (std::uint64_t i = 0; i < EngineBlockKeys::kAgreementWindow; ++i) {
    EngineKvEvent e{EngineKvEvent::Kind::kStored, {1000 + i}};
    e.token_ids = {static_cast<std::int32_t>(i), 0, 0, 0};
    e.block_size = 4;
    out.clear();
    disagrees.Translate(e, &out);
    stored.push_back(out.at(0).block);
    EXPECT_EQ(disagrees.agreement(), EngineBlockKeys::Agreement::kUnknown);
    retract = disagrees.Observe(1, 0);
  }
  EXPECT_EQ(disagrees.agreement(), EngineBlockKeys::Agreement::kDisagrees);
  ASSERT_EQ(retract.size(), stored.size());
  std::sort(stored.begin(), stored.end());
  for (std::size_t i = 0; i < stored.size(); ++i) {
    EXPECT_EQ(retract[i].kind, KvEvent::Kind::kRemoved);
    EXPECT_EQ(retract[i].block, stored[i]);
  }
  out.clear();
  EXPECT_EQ(disagrees.Translate(StoredInTwoParts(tokens)[0], &out), 0);
  EXPECT_TRUE(out.empty());  // ignored from now on
  EXPECT_EQ(disagrees.Translate({EngineKvEvent::Kind::kCleared}, &out), 0);
  EXPECT_EQ(out.size(), 1u);  // but "all cleared" still holds
}

}  // namespace
}  // namespace tessera::serve
