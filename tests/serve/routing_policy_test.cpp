#include "serve/routing_policy.h"

#include <gtest/gtest.h>

#include <vector>

#include "serve/routed_load.h"
#include "serve/router.h"

namespace tessera::serve {
namespace {

// Three replicas; the expected choice of each policy is worked out in the comments.
struct Fixture {
  std::vector<ReplicaLoad> loads{3};
  std::vector<std::int32_t> matched{0, 0, 0};
  std::vector<std::int64_t> cached{0, 0, 0};
  std::vector<std::int32_t> candidates{0, 1, 2};
  EngineProfile engine;
  RoutingConfig config;
  RouteContext ctx() const {
    return RouteContext{loads, matched, cached, candidates, 16, &engine, &config};
  }
};

std::int32_t Pick(std::string_view policy, const Fixture& f, const RouteRequest& r) {
  auto p = MakeRoutingPolicy(policy);
  EXPECT_TRUE(p.has_value());
  return (*p)->Route(r, f.ctx()).replica;
}

const std::vector<BlockHash> kBlocks{1, 2, 3, 4};  // 4 blocks of 16 tokens

TEST(RoutingPolicy, RegistryNamesAndRefusesUnknown) {
  EXPECT_EQ(RoutingPolicyNames(), (std::vector<std::string>{"round-robin", "least-request",
                                                            "prefix", "weighted", "tessera"}));
  auto bad = MakeRoutingPolicy("random");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("'random' is unknown"), std::string::npos);
}

TEST(RoutingPolicy, RoundRobinCyclesOverReadyReplicas) {
  Fixture f;
  f.candidates = {0, 2};
  auto p = MakeRoutingPolicy("round-robin");
  ASSERT_TRUE(p.has_value());
  const RouteRequest r{kBlocks, 64, 10};
  EXPECT_EQ((*p)->Route(r, f.ctx()).replica, 0);
  EXPECT_EQ((*p)->Route(r, f.ctx()).replica, 2);
  EXPECT_EQ((*p)->Route(r, f.ctx()).replica, 0);
}

TEST(RoutingPolicy, LeastRequestTiesToLowestIndex) {
  Fixture f;
  f.loads[0].running = 3;
  f.loads[1].running = 1;
  f.loads[2].waiting = 1;
  EXPECT_EQ(Pick("least-request", f, {kBlocks, 64, 10}), 1);  // 3, 1, 1: the first of the ones
}

TEST(RoutingPolicy, PrefixFollowsCacheUnlessImbalanced) {
  Fixture f;
  f.matched = {0, 3, 1};  // replica 1 holds 48 of 64 tokens: rate 0.75 > 0.3
  f.cached = {5, 9, 2};
  f.loads[1].running = 10;
  EXPECT_EQ(Pick("prefix", f, {kBlocks, 64, 10}), 1);
  // Below the threshold (1 block of 4 = 16 of 64 tokens = 0.25): the smallest tree, replica 2.
  f.matched = {0, 1, 0};
  EXPECT_EQ(Pick("prefix", f, {kBlocks, 64, 10}), 2);
  // Equal trees: the less loaded (replica 0 runs 0, replica 2 runs 0 but waits 1).
  f.cached = {3, 9, 3};
  f.loads[2].waiting = 1;
  EXPECT_EQ(Pick("prefix", f, {kBlocks, 64, 10}), 0);
  f.loads[0].waiting = 2;
  EXPECT_EQ(Pick("prefix", f, {kBlocks, 64, 10}), 2);
  f.loads[0].waiting = f.loads[2].waiting = 0;
  f.cached = {5, 9, 2};
  // Imbalanced: max 100 - min 0 > 64 and 100 > 0 * 1.5: the least loaded, replica 0.
  f.matched = {0, 3, 1};
  f.loads[1].running = 100;
  f.loads[2].running = 5;
  EXPECT_EQ(Pick("prefix", f, {kBlocks, 64, 10}), 0);
}

TEST(RoutingPolicy, WeightedSumsLlmdScores) {
  Fixture f;
  // queue: waiting 4, 0, 2 -> scores 0, 1, 0.5; kv: 0.5, 0.9, 0.0 -> 0.5, 0.1, 1.0;
  // prefix: 4/4, 0, 1/4.
  f.loads[0].waiting = 4;
  f.loads[2].waiting = 2;
  f.loads[0].kv_utilisation = 0.5;
  f.loads[1].kv_utilisation = 0.9;
  f.matched = {4, 0, 1};
  // totals: 2*0 + 2*0.5 + 3*1 = 4; 2*1 + 2*0.1 + 0 = 2.2; 2*0.5 + 2*1 + 3*0.25 = 3.75.
  EXPECT_EQ(Pick("weighted", f, {kBlocks, 64, 10}), 0);
  f.matched = {1, 0, 1};  // replica 0: 0 + 1 + 0.75 = 1.75 < replica 2's 3.75
  EXPECT_EQ(Pick("weighted", f, {kBlocks, 64, 10}), 2);
}

TEST(RoutingPolicy, TesseraPredictsTtftAndAvoidsHotReplicas) {
  Fixture f;
  f.engine.step_base_us = 1000;
  f.engine.prefill_us_per_token = 10;
  f.engine.prefill_attention_us_per_ktoken = 0;
  f.engine.decode_us_per_sequence = 0;
  f.engine.decode_us_per_context_token = 0;
  f.engine.max_batched_tokens = 1000;
  f.config.slo_ttft_ms = 100;
  // Prompt of 640 tokens; cost = predicted TTFT + 10 x the request's own prefill time.
  // Replica 0 holds 32 of its 40 blocks (512 tokens, 128 to prefill) but has 2000 tokens
  // queued: 2128 tokens in 3 steps, 3 ms + 21.28 ms = 24.28 ms; own work 1 ms + 1.28 ms: cost
  // 24.28 + 22.8 = 47.08. Replica 1 holds nothing, none queued: 1 ms + 6.4 ms = 7.4 ms, cost
  // 7.4 + 74 = 81.4. Replica 2 holds 39 blocks (16 tokens to prefill), 100 queued:
  // 1 ms + 1.16 ms = 2.16 ms, cost 2.16 + 11.6 = 13.76: the winner.
  std::vector<BlockHash> blocks(40);
  for (std::size_t i = 0; i < blocks.size(); ++i) blocks[i] = i + 1;
  f.matched = {32, 0, 39};
  f.loads[0].queued_prefill_tokens = 2000;
  f.loads[2].queued_prefill_tokens = 100;
  const RouteRequest r{blocks, 640, 10};
  EXPECT_EQ(Pick("tessera", f, r), 2);
  EXPECT_NEAR(PredictTtftMs(f.engine, f.loads[2], 16, 640), 2.16, 1e-9);
  // Replica 2 runs 20 requests, the mean is 20/3: hot above 1.25 * 6.67 + 2 = 10.3. Next
  // cheapest: replica 0, whose cached prefix saves more work than replica 1's idleness saves time.
  f.loads[2].running = 20;
  EXPECT_EQ(Pick("tessera", f, r), 0);
  // A soft guard charges replica 2 per request over the line (20 - 10.33 = 9.67) instead:
  // 13.76 + 3 x 9.67 = 42.76 still beats replica 0's 47.08; at 4 ms each (52.43) it does not.
  f.config.hot_penalty_ms = 3;
  EXPECT_EQ(Pick("tessera", f, r), 2);
  f.config.hot_penalty_ms = 4;
  EXPECT_EQ(Pick("tessera", f, r), 0);
  f.config.hot_penalty_ms = 0;
  // Without the work term the idle replica 1 answers sooner (7.4 ms against 24.28 ms).
  f.config.work_weight = 0;
  EXPECT_EQ(Pick("tessera", f, r), 1);
}

TEST(RoutingPolicy, TesseraRejectsWhenNoReplicaMeetsTheSlo) {
  Fixture f;
  f.engine.step_base_us = 1000;
  f.engine.prefill_us_per_token = 10;
  f.config.slo_ttft_ms = 5;
  for (auto& l : f.loads) l.queued_prefill_tokens = 100000;  // > 1 s of prefill queued everywhere
  auto p = MakeRoutingPolicy("tessera");
  ASSERT_TRUE(p.has_value());
  const RouteDecision d = (*p)->Route({kBlocks, 64, 10}, f.ctx());
  EXPECT_EQ(d.replica, -1);
  EXPECT_EQ(d.reason, RejectReason::kTtftSlo);
  EXPECT_GT(d.predicted_ttft_ms, 1000);
  // A prompt that would miss the SLO even on an idle replica (2,000 tokens: 1 ms + 20 ms > 5 ms)
  // is served as well as it can be, not refused: refusing it would not save the others much.
  for (auto& l : f.loads) l.queued_prefill_tokens = 0;
  const RouteDecision long_prompt = (*p)->Route({kBlocks, 2000, 10}, f.ctx());
  EXPECT_EQ(long_prompt.replica, 0);
  EXPECT_EQ(long_prompt.reason, RejectReason::kNone);
}

TEST(Router, LearnsFromDecisionsAndSkipsUnreadyReplicas) {
  auto p = MakeRoutingPolicy("prefix");
  ASSERT_TRUE(p.has_value());
  Router router(std::move(*p), 2, 16, EngineProfile{}, RoutingConfig{});
  std::vector<ReplicaLoad> loads(2);
  loads[0].ready = false;
  const RouteRequest r{kBlocks, 64, 10};
  EXPECT_EQ(router.Route(r, loads).replica, 1);  // the only ready replica
  loads[0].ready = true;
  // Replica 1 now holds the prompt in the index (learned), so the prefix policy follows it.
  EXPECT_EQ(router.Route(r, loads).replica, 1);
  EXPECT_EQ(router.last_match()[1], 4);
  // A removal event corrects the index.
  router.ApplyKvEvents(1, std::vector<KvEvent>{{KvEvent::Kind::kCleared, 0}});
  EXPECT_EQ(router.index().blocks_on(1), 0);
  loads[0].ready = loads[1].ready = false;
  EXPECT_EQ(router.Route(r, loads).reason, RejectReason::kNoReadyReplica);
}

// The bound (for engines without events) forgets in routing order, not the engine's eviction
// order: once a replica's events name blocks routed there, they keep its blocks exact and the
// bound would only lose blocks it still holds (the live gateway's and the simulator's indexes
// then forgot a long prefix at different moments, and one request's hit differed).
TEST(Router, KvEventsThatAgreeLiftTheIndexBound) {
  auto p = MakeRoutingPolicy("prefix");
  ASSERT_TRUE(p.has_value());
  Router router(std::move(*p), 2, 16, EngineProfile{}, RoutingConfig{}, 4);
  const std::vector<ReplicaLoad> loads(2);
  const auto stored = [](std::vector<BlockHash> blocks) {
    std::vector<KvEvent> events;
    for (BlockHash b : blocks) events.push_back({KvEvent::Kind::kStored, b});
    return events;
  };
  ASSERT_EQ(router.Route({kBlocks, 64, 1}, loads).replica, 0);
  EXPECT_TRUE(router.index().bounded(0));
  // Blocks the index did not place there show no agreement: the bound stays (and forgets 1).
  EXPECT_EQ(router.ApplyKvEvents(0, stored({99})), 0);
  EXPECT_TRUE(router.index().bounded(0));
  EXPECT_EQ(router.index().blocks_on(0), 4);
  EXPECT_EQ(router.ApplyKvEvents(0, stored({4})), 1);
  EXPECT_FALSE(router.index().bounded(0));
  EXPECT_TRUE(router.index().bounded(1));
  router.ApplyKvEvents(0, stored({11, 12}));
  EXPECT_EQ(router.index().blocks_on(0), 6);  // over the bound of 4, nothing forgotten
  // Another engine in the slot: nothing cached, and the bound applies again.
  router.ReplicaReplaced(0);
  EXPECT_EQ(router.index().blocks_on(0), 0);
  EXPECT_TRUE(router.index().bounded(0));
  router.ApplyKvEvents(0, stored({11, 12, 13, 14, 15}));
  EXPECT_EQ(router.index().blocks_on(0), 4);
}

TEST(RoutedLoad, UncachedPromptQueuedUntilTheFirstTokenThenRunning) {
  RoutedLoad load(2);
  const RoutedLoad::Ticket a = load.Routed(1, 100, 32);
  const RoutedLoad::Ticket b = load.Routed(1, 50, 80);  // a match past the prompt counts as all
  std::vector<ReplicaLoad> loads(2);
  loads[1].ready = false;
  load.Fill(loads);
  EXPECT_EQ(loads[1].waiting, 2);
  EXPECT_EQ(loads[1].running, 0);
  EXPECT_EQ(loads[1].queued_prefill_tokens, 68);
  EXPECT_EQ(loads[1].context_tokens, 150);
  EXPECT_FALSE(loads[1].ready);  // readiness is not RoutedLoad's
  EXPECT_EQ(loads[0].requests(), 0);
  load.FirstToken(a);
  load.Fill(loads);
  EXPECT_EQ(loads[1].waiting, 1);
  EXPECT_EQ(loads[1].running, 1);
  EXPECT_EQ(loads[1].queued_prefill_tokens, 0);
  load.Finished(a, true);
  load.Finished(b, false);
  load.Fill(loads);
  EXPECT_EQ(loads[1].requests(), 0);
  EXPECT_EQ(loads[1].context_tokens, 0);
  EXPECT_EQ(load.in_flight(1), 0);
  load.Routed(0, 10, 0);
  load.Grow(4);
  EXPECT_EQ(load.replicas(), 4);
  EXPECT_EQ(load.in_flight(0), 1);
  load.Clear(0);
  EXPECT_EQ(load.in_flight(0), 0);
}

}  // namespace
}  // namespace tessera::serve
