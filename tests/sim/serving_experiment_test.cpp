#include "sim/serving/serving_experiment.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sim/serving/global_lru.h"
#include "sim/serving/replay_prompts.h"
#include "sim/serving/serving_summary.h"
#include "sim/trace/llm_trace.h"

namespace tessera {
namespace {

std::string WriteTemp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

// A hand-made Mooncake-style trace: two conversations of four turns each; each turn's prompt
// extends the previous one by a block, so later turns hit the cache if routed to the same
// replica.
LlmTrace Conversations() {
  LlmTrace t;
  t.format = "mooncake";
  t.block_tokens = 512;
  for (int turn = 0; turn < 4; ++turn) {
    for (std::uint64_t conv = 0; conv < 2; ++conv) {
      LlmRequest r;
      r.arrival_us = (turn * 2 + static_cast<int>(conv)) * 2'000'000;
      for (int b = 0; b <= turn + 1; ++b) r.block_hashes.push_back(conv * 100 + b);
      r.prompt_tokens = static_cast<std::int64_t>(r.block_hashes.size()) * 512;
      r.output_tokens = 20;
      t.requests.push_back(r);
    }
  }
  return t;
}

TEST(LlmTrace, ReadsMooncakeAndAzure) {
  const std::string mooncake = WriteTemp(
      "serve_trace_test.jsonl",
      "{\"timestamp\": 3000, \"input_length\": 600, \"output_length\": 5, \"hash_ids\": [0, 1]}\n"
      "{\"timestamp\": 1000, \"input_length\": 10, \"output_length\": 2, \"hash_ids\": [0]}\n");
  auto m = ReadLlmTrace(mooncake);
  ASSERT_TRUE(m.has_value()) << m.error().message;
  EXPECT_EQ(m->format, "mooncake");
  EXPECT_EQ(m->block_tokens, 512);
  ASSERT_EQ(m->requests.size(), 2u);
  EXPECT_EQ(m->requests[0].prompt_tokens, 10);  // sorted by arrival, relative to the first
  EXPECT_EQ(m->requests[1].arrival_us, 2'000'000);
  EXPECT_EQ(m->requests[1].block_hashes, (std::vector<std::uint64_t>{0, 1}));

  const std::string azure = WriteTemp("serve_trace_test.csv",
                                      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                      "2023-11-16 18:15:46.6805900,374,44\n"
                                      "2023-11-16 18:15:50.9951690,396,109\n");
  auto a = ReadLlmTrace(azure);
  ASSERT_TRUE(a.has_value()) << a.error().message;
  EXPECT_EQ(a->format, "azure");
  ASSERT_EQ(a->requests.size(), 2u);
  EXPECT_EQ(a->requests[1].arrival_us, 4'314'579);  // 50.9951690 - 46.6805900 s
  EXPECT_EQ(a->requests[1].output_tokens, 109);

  const std::string bad = WriteTemp("serve_trace_bad.jsonl",
                                    "{\"timestamp\": 0, \"input_length\": -4, \"output_length\": "
                                    "1, \"hash_ids\": []}\n");
  auto b = ReadLlmTrace(bad);
  ASSERT_FALSE(b.has_value());
  EXPECT_NE(b.error().message.find(":1: input_length: must be >= 0"), std::string::npos);
}

TEST(GlobalLru, HitRateAndAutoCapacity) {
  const LlmTrace t = Conversations();
  // Unlimited: turn k (k >= 1) of each conversation hits its k+1 earlier blocks:
  // hits (2 + 3 + 4) * 512 * 2 conversations over prompts (2 + 3 + 4 + 5) * 512 * 2 = 9/14.
  EXPECT_NEAR(GlobalLruHitRate(t.requests, 512, 0), 9.0 / 14, 1e-12);
  // One block of room: nothing survives to the next turn of the same conversation.
  EXPECT_NEAR(GlobalLruHitRate(t.requests, 512, 1), 0, 1e-12);
  const std::int64_t c = CapacityForHitRateFraction(t.requests, 512, 0.9);
  EXPECT_GE(GlobalLruHitRate(t.requests, 512, c), 0.9 * 9.0 / 14);
  EXPECT_LT(GlobalLruHitRate(t.requests, 512, c - 1), 0.9 * 9.0 / 14);
}

TEST(ServingExperiment, PrefixAwareRoutersKeepConversationsTogether) {
  const LlmTrace t = Conversations();
  ServingOptions o;
  o.replicas = 4;
  auto rr = RunServing(t, "round-robin", o);
  auto tessera = RunServing(t, "tessera", o);
  ASSERT_TRUE(rr.has_value());
  ASSERT_TRUE(tessera.has_value());
  EXPECT_EQ(tessera->completed, 8);
  EXPECT_EQ(tessera->rejected, 0);
  // Round-robin sends turn k of conversation c to replica (2k + c) % 4, so consecutive turns
  // land on different replicas and only every other turn finds its prefix; tessera follows the
  // cache and hits everything the global LRU does.
  EXPECT_NEAR(tessera->prefix_hit_rate, 9.0 / 14, 1e-12);
  EXPECT_LT(rr->prefix_hit_rate, tessera->prefix_hit_rate);
  EXPECT_LT(tessera->ttft_ms.mean, rr->ttft_ms.mean);
  EXPECT_DOUBLE_EQ(tessera->slo_attainment, 1.0);
  EXPECT_GT(tessera->goodput_rps, 0);
  EXPECT_EQ(tessera->tbt_ms.count, 8 * 19);  // 19 gaps per 20-token answer
}

TEST(ServingExperiment, DeterministicAndSummaryKeys) {
  const LlmTrace t = Conversations();
  ServingOptions o;
  o.replicas = 3;
  o.rate_scale = 4;
  for (const std::string router :
       {"round-robin", "least-request", "prefix", "weighted", "tessera"}) {
    auto a = RunServing(t, router, o);
    auto b = RunServing(t, router, o);
    ASSERT_TRUE(a.has_value());
    ASSERT_TRUE(b.has_value());
    auto ja = ServingRunJson(*a, 0.5);
    auto jb = ServingRunJson(*b, 0.5);
    ja.erase("run_wall_seconds");
    jb.erase("run_wall_seconds");
    EXPECT_EQ(ja, jb) << router;
    for (const char* key : {"router", "prefix_hit_rate", "global_lru_hit_rate", "ttft_ms", "tbt_ms",
                            "slo_attainment", "goodput_rps", "rejected", "load_imbalance"}) {
      EXPECT_TRUE(ja.contains(key)) << key;
    }
    for (const char* p : {"mean", "p50", "p90", "p99"}) EXPECT_TRUE(ja["ttft_ms"].contains(p));
    EXPECT_EQ(ja["router"], router);
  }
}

TEST(ServingExperiment, GatewayLoadViewCountsTheSameRequestsInFlight) {
  // least-request reads only running + waiting, which the gateway's view (routed until the first
  // token, then running until the end) and the engines' own state agree on at every instant, so
  // its decisions, and so every figure, are the same under both views.
  const LlmTrace t = Conversations();
  ServingOptions o;
  o.replicas = 3;
  o.rate_scale = 8;
  auto engine = RunServing(t, "least-request", o);
  o.load_view = LoadView::kGateway;
  auto gateway = RunServing(t, "least-request", o);
  ASSERT_TRUE(engine.has_value());
  ASSERT_TRUE(gateway.has_value());
  auto je = ServingRunJson(*engine, 0.5);
  auto jg = ServingRunJson(*gateway, 0.5);
  je.erase("run_wall_seconds");
  jg.erase("run_wall_seconds");
  EXPECT_EQ(je, jg);
  EXPECT_EQ(ParseLoadView("gateway").value(), LoadView::kGateway);
  EXPECT_NE(ParseLoadView("engines").error().message.find("load-view"), std::string::npos);
}

TEST(ServingExperiment, WarmupIsRunButNotMeasuredAndJitterIsSeeded) {
  const LlmTrace t = Conversations();
  ServingOptions o;
  o.replicas = 4;
  // The first turn of each conversation is the warm-up: the six measured turns all find their
  // prefix (tessera keeps each conversation on one replica): (2 + 3 + 4) / (3 + 4 + 5) blocks.
  o.warmup_requests = 2;
  auto warm = RunServing(t, "tessera", o);
  ASSERT_TRUE(warm.has_value());
  EXPECT_EQ(warm->requests, 6);
  EXPECT_EQ(warm->completed, 6);
  EXPECT_NEAR(warm->prefix_hit_rate, 9.0 / 12, 1e-12);
  EXPECT_EQ(warm->tbt_ms.count, 6 * 19);
  EXPECT_EQ(warm->hit_tokens.size(), 8u);  // per request, the warm-up's too
  EXPECT_EQ(warm->hit_tokens[0], 0);
  ASSERT_EQ(warm->request_ttft_ms.size(), 8u);
  EXPECT_GT(warm->request_ttft_ms[0], 0);
  EXPECT_NEAR(warm->duration_seconds, 10, 1e-9);  // measured arrivals 4 s to 14 s
  // Jitter moves arrivals by a seeded draw: the same seed, the same run; another, another.
  o.arrival_jitter_us = 1'500'000;
  o.jitter_seed = 7;
  auto a = RunServing(t, "tessera", o);
  auto b = RunServing(t, "tessera", o);
  o.jitter_seed = 8;
  auto c = RunServing(t, "tessera", o);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->ttft_ms.mean, b->ttft_ms.mean);
  EXPECT_NE(a->duration_seconds, c->duration_seconds);
}

TEST(ServingExperiment, OverloadIsRejectedEarlyByTessera) {
  // 200 identical-length uncached prompts at once on one replica: the queue makes later ones
  // miss a 1 s TTFT SLO, which tessera refuses up front while least-request queues them all.
  LlmTrace t;
  t.format = "azure";
  for (int i = 0; i < 200; ++i) t.requests.push_back({0, 4000, 10, {}});
  ServingOptions o;
  o.replicas = 1;
  o.slo_ttft_ms = 1000;
  auto lr = RunServing(t, "least-request", o);
  auto ts = RunServing(t, "tessera", o);
  ASSERT_TRUE(lr.has_value());
  ASSERT_TRUE(ts.has_value());
  EXPECT_EQ(lr->rejected, 0);
  EXPECT_GT(ts->rejected, 100);
  EXPECT_EQ(ts->reject_reasons.begin()->first, "no replica can meet the TTFT SLO");
  EXPECT_GT(ts->slo_attainment, 0);
  EXPECT_GE(ts->slo_attainment, lr->slo_attainment);
  // What it accepted it served about in time (the prediction ignores the step in flight).
  EXPECT_LT(ts->ttft_ms.p99, 1100);
}

TEST(ServingExperiment, LoadImbalanceAndItsFloor) {
  // Three equal requests at once on four replicas: least-request spreads them one per replica,
  // so max/mean running = 1 / (3/4) = 4/3, which is also the floor (ceil(3/4) / (3/4)); all on
  // one replica would be 3 / (3/4) = 4.
  LlmTrace t;
  t.format = "azure";
  for (int i = 0; i < 3; ++i) t.requests.push_back({0, 64, 50, {}});
  ServingOptions o;
  o.replicas = 4;
  auto lr = RunServing(t, "least-request", o);
  ASSERT_TRUE(lr.has_value());
  EXPECT_NEAR(lr->load_imbalance, 4.0 / 3, 1e-9);
  EXPECT_NEAR(lr->load_imbalance_floor, 4.0 / 3, 1e-9);
  EXPECT_TRUE(ServingRunJson(*lr, 0).contains("load_imbalance_floor"));
}

TEST(ReplayPrompts, BlocksShareExactlyWhereTheTraceDoes) {
  // Two turns of one conversation (hash ids 7, 8 then 7, 8, 9) and an unrelated request whose
  // first id differs; 4-token blocks, prompts ending in a partial block.
  LlmTrace t;
  t.format = "mooncake";
  t.block_tokens = 4;
  t.requests = {{0, 7, 5, {7, 8}}, {1000, 10, 5, {7, 8, 9}}, {2000, 7, 5, {3, 8}}};
  const auto a = ReplayPromptTokens(t.requests[0], 0, 4);
  const auto b = ReplayPromptTokens(t.requests[1], 1, 4);
  ASSERT_EQ(a.size(), 7u);
  ASSERT_EQ(b.size(), 10u);
  EXPECT_TRUE(std::equal(a.begin(), a.begin() + 7, b.begin()));  // ids 7, 8: the same tokens
  for (std::int32_t tok : b) EXPECT_GE(tok, 0);
  const LlmTrace sim = ReplayTraceForSim(t, 4);
  ASSERT_EQ(sim.requests[0].block_hashes.size(), 1u);  // full blocks only: 7 tokens, 1 block
  ASSERT_EQ(sim.requests[1].block_hashes.size(), 2u);
  EXPECT_EQ(sim.requests[0].block_hashes[0], sim.requests[1].block_hashes[0]);
  // Same second id (8) after a different first one: a different chained hash, nothing shared.
  EXPECT_NE(sim.requests[2].block_hashes[0], sim.requests[0].block_hashes[0]);
  EXPECT_EQ(sim.requests[1].arrival_us, 1000);
  // Without hash ids nothing is shared, even between equal lengths.
  LlmTrace azure;
  azure.format = "azure";
  azure.requests = {{0, 32, 1, {}}, {0, 32, 1, {}}};
  const LlmTrace none = ReplayTraceForSim(azure, 16);
  EXPECT_NE(none.requests[0].block_hashes[0], none.requests[1].block_hashes[0]);
}

TEST(RoutingParams, SetByNameOrRefused) {
  serve::RoutingConfig c;
  ASSERT_TRUE(serve::SetRoutingParam(&c, "hot_rel", 1.5).has_value());
  ASSERT_TRUE(serve::SetRoutingParam(&c, "balance_abs_threshold", 8).has_value());
  EXPECT_EQ(c.hot_rel, 1.5);
  EXPECT_EQ(c.balance_abs_threshold, 8);
  auto unknown = serve::SetRoutingParam(&c, "hot", 1);
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.error().message.find("'hot' is unknown"), std::string::npos);
  EXPECT_FALSE(serve::SetRoutingParam(&c, "work_weight", -1).has_value());
  EXPECT_EQ(c.work_weight, serve::RoutingConfig{}.work_weight);  // nothing half-applied
}

}  // namespace
}  // namespace tessera
