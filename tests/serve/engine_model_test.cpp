#include "serve/engine_model.h"

#include <gtest/gtest.h>

#include <vector>

namespace tessera::serve {
namespace {

// A profile with round numbers, so that step times can be worked out by hand.
EngineProfile RoundProfile() {
  EngineProfile p;
  p.step_base_us = 1000;
  p.prefill_us_per_token = 10;
  p.prefill_attention_us_per_ktoken = 0;
  p.decode_us_per_sequence = 100;
  p.decode_us_per_context_token = 0;
  p.max_batched_tokens = 64;
  p.max_batch_sequences = 8;
  p.kv_bytes_per_token = 1000;
  p.pcie_gb_per_s = 1;  // 1 byte per ns: 1000 bytes per microsecond
  return p;
}

EngineRequest Request(std::int64_t id, std::vector<BlockHash> blocks, std::int64_t prompt,
                      std::int64_t output) {
  return EngineRequest{id, std::move(blocks), prompt, output};
}

TEST(KvCache, ReusesPrefixAndEvictsLeastRecentlyUsed) {
  KvCache cache(4, 0);
  std::vector<BlockHash> a, b;
  cache.Acquire({}, {}, 2, &a);
  EXPECT_EQ(cache.Publish(std::vector<BlockHash>{1, 2}, &a), 2);
  cache.Release(a, 0);
  EXPECT_EQ(cache.used(), 0);
  EXPECT_EQ(cache.available(), 4);
  EXPECT_EQ(cache.Find(std::vector<BlockHash>{1, 2, 3}).gpu, 2);
  // Four fresh blocks: both cached blocks are evicted, the older (1) first.
  cache.Acquire({}, {}, 4, &b);
  const auto events = cache.TakeEvents();
  ASSERT_EQ(events.size(), 4u);  // stored 1, stored 2, removed 1, removed 2
  EXPECT_EQ(events[2].kind, KvEvent::Kind::kRemoved);
  EXPECT_EQ(events[2].block, 1u);
  EXPECT_EQ(cache.Find(std::vector<BlockHash>{1}).gpu, 0);
}

TEST(KvCache, HostTierKeepsEvictedBlocks) {
  KvCache cache(2, 8);
  std::vector<BlockHash> a, b;
  cache.Acquire({}, {}, 2, &a);
  cache.Publish(std::vector<BlockHash>{1, 2}, &a);
  cache.Release(a, 0);
  cache.Acquire({}, {}, 2, &b);  // evicts 1 and 2 to the host tier
  cache.Release(b, 2);
  const KvCache::Match m = cache.Find(std::vector<BlockHash>{1, 2});
  EXPECT_EQ(m.gpu, 0);
  EXPECT_EQ(m.host, 2);
}

TEST(EngineReplica, PrefillThenDecodeTiming) {
  EngineReplica e(RoundProfile(), 16, 100, 0);
  ASSERT_TRUE(e.Enqueue(Request(1, {11, 12}, 40, 3)));
  // Step 1: admit and prefill all 40 tokens (budget 64): 1000 + 40 * 10 = 1400 us.
  EXPECT_EQ(e.BeginStep(), 1400);
  StepOutcome s1 = e.FinishStep();
  ASSERT_EQ(s1.tokens.size(), 1u);
  EXPECT_TRUE(s1.tokens[0].first);
  ASSERT_EQ(s1.admitted.size(), 1u);
  EXPECT_EQ(s1.admitted[0].gpu_hit_tokens, 0);
  // Step 2: one decode: 1000 + 100 = 1100 us.
  EXPECT_EQ(e.BeginStep(), 1100);
  EXPECT_FALSE(e.FinishStep().tokens[0].last);
  EXPECT_EQ(e.BeginStep(), 1100);
  EXPECT_TRUE(e.FinishStep().tokens[0].last);
  EXPECT_TRUE(e.idle());
  EXPECT_EQ(e.BeginStep(), 0);
}

TEST(EngineReplica, PrefixHitSkipsPrefillAndChunksLongPrompts) {
  EngineReplica e(RoundProfile(), 16, 100, 0);
  ASSERT_TRUE(e.Enqueue(Request(1, {11, 12}, 40, 1)));
  e.BeginStep();
  e.FinishStep();  // finished after its first token; blocks 11 and 12 stay cached
  // The second prompt shares both full blocks (32 tokens): 8 tokens left to prefill.
  ASSERT_TRUE(e.Enqueue(Request(2, {11, 12, 13}, 100, 1)));
  EXPECT_EQ(e.Load().queued_prefill_tokens, 68);
  // 68 tokens in chunks of 64: 1000 + 640 = 1640 us, then 1000 + 40 = 1040 us.
  EXPECT_EQ(e.BeginStep(), 1640);
  const StepOutcome s = e.FinishStep();
  EXPECT_TRUE(s.tokens.empty());
  ASSERT_EQ(s.admitted.size(), 1u);
  EXPECT_EQ(s.admitted[0].gpu_hit_tokens, 32);
  EXPECT_EQ(e.BeginStep(), 1040);
  EXPECT_TRUE(e.FinishStep().tokens.at(0).last);
}

TEST(EngineReplica, HostReloadCostsPcieTime) {
  EngineReplica e(RoundProfile(), 16, 4, 16);
  ASSERT_TRUE(e.Enqueue(Request(1, {1, 2}, 32, 1)));  // 2 blocks (first token needs no more)
  e.BeginStep();
  e.FinishStep();
  ASSERT_TRUE(e.Enqueue(Request(2, {7, 8, 9}, 48, 1)));  // 4 blocks: evicts 1 and 2 to host
  e.BeginStep();
  e.FinishStep();
  ASSERT_TRUE(e.Enqueue(Request(3, {1, 2}, 33, 1)));
  // Both blocks reload: 2 * 16 tokens * 1000 bytes = 32,000 bytes at 1000 bytes/us = 32 us;
  // 1 token to prefill: 1000 + 10 + 32 = 1042 us.
  EXPECT_EQ(e.BeginStep(), 1042);
  const StepOutcome s = e.FinishStep();
  ASSERT_EQ(s.admitted.size(), 1u);
  EXPECT_EQ(s.admitted[0].host_hit_tokens, 32);
}

TEST(EngineReplica, RefusesWhatCanNeverFit) {
  EngineReplica e(RoundProfile(), 16, 4, 0);
  EXPECT_FALSE(e.Enqueue(Request(1, {}, 100, 1)));  // 7 blocks > 4
  EXPECT_TRUE(e.idle());
}

TEST(EngineReplica, WaitsForKvSpaceFirstComeFirstServed) {
  EngineReplica e(RoundProfile(), 16, 4, 0);
  ASSERT_TRUE(e.Enqueue(Request(1, {}, 48, 2)));  // 4 blocks: the whole cache
  ASSERT_TRUE(e.Enqueue(Request(2, {}, 16, 1)));
  e.BeginStep();
  e.FinishStep();
  EXPECT_EQ(e.Load().running, 1);
  EXPECT_EQ(e.Load().waiting, 1);
  EXPECT_DOUBLE_EQ(e.Load().kv_utilisation, 1.0);
  e.BeginStep();
  e.FinishStep();  // request 1 done
  e.BeginStep();
  const StepOutcome s = e.FinishStep();
  ASSERT_EQ(s.admitted.size(), 1u);
  EXPECT_EQ(s.admitted[0].id, 2);
}

}  // namespace
}  // namespace tessera::serve
