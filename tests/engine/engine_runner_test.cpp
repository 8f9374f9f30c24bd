// The simulated engine's wall-clock runner, 100x faster than modelled time.
#include "engine/engine_runner.h"

#include <gtest/gtest.h>
#include <msgpack.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "engine/zmq_kv_publisher.h"

namespace tessera::engine {
namespace {

EngineOptions Fast() {
  EngineOptions o;
  o.time_scale = 0.01;
  o.gpu_blocks = 1000;
  return o;
}

std::vector<std::int32_t> Prompt(int n, int first = 0) {
  std::vector<std::int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back(first + i);
  return p;
}

RequestStream::Progress WaitDone(RequestStream& s) {
  RequestStream::Progress p;
  for (int i = 0; i < 200 && !p.finished && !p.aborted; ++i) p = s.WaitPast(p.tokens, 50);
  return p;
}

TEST(EngineRunner, ReleasesEveryTokenAndReusesTheCachedPrefix) {
  EngineRunner runner(Fast());
  auto first = runner.Submit(Prompt(64), 5);
  ASSERT_EQ(first.refusal, EngineRunner::Refusal::kNone);
  auto p = WaitDone(*first.stream);
  EXPECT_TRUE(p.finished);
  EXPECT_EQ(p.tokens, 5);
  EXPECT_EQ(first.stream->cached_tokens(), 0);
  // The same 64 tokens again: its 4 whole blocks are cached (the engine model counts them as
  // hits even though it recomputes the last token for its logits).
  auto second = runner.Submit(Prompt(64), 2);
  ASSERT_TRUE(second.stream);
  EXPECT_TRUE(WaitDone(*second.stream).finished);
  EXPECT_EQ(second.stream->cached_tokens(), 64);
  const EngineCounters c = runner.Counters();
  EXPECT_EQ(c.successes, 2);
  EXPECT_EQ(c.generation_tokens, 7);
  EXPECT_EQ(c.prefix_queries_tokens, 128);
  EXPECT_EQ(c.prefix_hits_tokens, 64);
  EXPECT_EQ(c.running + c.waiting, 0);
}

TEST(EngineRunner, RefusesWhatCanNeverFitAndWhatTheQueueCannotHold) {
  EngineOptions o = Fast();
  o.profile.max_context_tokens = 100;
  o.max_waiting = 1;
  o.time_scale = 1;  // slow: the queue stays full while we look
  EngineRunner runner(o);
  EXPECT_EQ(runner.Submit(Prompt(90), 20).refusal, EngineRunner::Refusal::kTooLong);
  auto a = runner.Submit(Prompt(50), 40);
  auto b = runner.Submit(Prompt(50, 1000), 40);
  ASSERT_EQ(a.refusal, EngineRunner::Refusal::kNone);
  // The first may already be admitted (then the second waits); either way a third is refused
  // once one request waits.
  auto c = runner.Submit(Prompt(50, 2000), 40);
  const bool refused = b.refusal == EngineRunner::Refusal::kQueueFull ||
                       c.refusal == EngineRunner::Refusal::kQueueFull;
  EXPECT_TRUE(refused);
  EXPECT_GE(runner.Counters().rejected_queue_full, 1);
  EXPECT_EQ(runner.Counters().rejected_too_long, 1);
}

TEST(EngineRunner, KvEventFeedStartsWithASnapshot) {
  EngineRunner runner(Fast());
  auto r = runner.Submit(Prompt(32), 1);
  WaitDone(*r.stream);
  auto feed = runner.SubscribeKvEvents();
  std::vector<std::string> messages;
  ASSERT_TRUE(feed->Next(&messages, 100));
  ASSERT_FALSE(messages.empty());
  auto snapshot = nlohmann::json::parse(messages[0]);
  ASSERT_EQ(snapshot["events"].size(), 2u);
  EXPECT_EQ(snapshot["events"][0]["type"], "AllBlocksCleared");
  EXPECT_EQ(snapshot["events"][1]["type"], "BlockStored");
  EXPECT_EQ(snapshot["events"][1]["block_hashes"].size(), 2u);  // 32 tokens = 2 blocks
  // A new prompt's blocks arrive as live events.
  auto s = runner.Submit(Prompt(16, 500), 1);
  WaitDone(*s.stream);
  messages.clear();
  ASSERT_TRUE(feed->Next(&messages, 1000));
  ASSERT_FALSE(messages.empty());
  EXPECT_NE(messages.back().find("BlockStored"), std::string::npos);
}

TEST(ZmqKvPublisher, EncodesVllmsArrayLayout) {
  // [ts, [["BlockStored", hashes, parent, token_ids, block_size, lora_id, medium],
  //       ["BlockRemoved", hashes, medium], ["AllBlocksCleared"]]]: what vLLM's msgspec
  // structs with array_like=True encode to, and what llm-d's decoder reads.
  serve::EngineKvEvent stored{serve::EngineKvEvent::Kind::kStored, {EngineHash(7)}, EngineHash(3)};
  stored.token_ids = {1, 2};
  stored.block_size = 2;
  const std::string bytes = EncodeKvEventBatch(12.5, {stored,
                                                      {serve::EngineKvEvent::Kind::kRemoved, {9}},
                                                      {serve::EngineKvEvent::Kind::kCleared}});
  msgpack_unpacked u;
  msgpack_unpacked_init(&u);
  std::size_t off = 0;
  ASSERT_EQ(msgpack_unpack_next(&u, bytes.data(), bytes.size(), &off), MSGPACK_UNPACK_SUCCESS);
  const msgpack_object& batch = u.data;
  ASSERT_EQ(batch.type, MSGPACK_OBJECT_ARRAY);
  ASSERT_EQ(batch.via.array.size, 2u);
  EXPECT_DOUBLE_EQ(batch.via.array.ptr[0].via.f64, 12.5);
  const msgpack_object_array& events = batch.via.array.ptr[1].via.array;
  ASSERT_EQ(events.size, 3u);
  const msgpack_object_array& s = events.ptr[0].via.array;
  ASSERT_EQ(s.size, 7u);
  EXPECT_EQ(std::string(s.ptr[0].via.str.ptr, s.ptr[0].via.str.size), "BlockStored");
  EXPECT_EQ(s.ptr[1].via.array.ptr[0].via.u64, EngineHash(7));
  EXPECT_EQ(s.ptr[2].via.u64, EngineHash(3));
  EXPECT_EQ(s.ptr[3].via.array.size, 2u);
  EXPECT_EQ(s.ptr[4].via.u64, 2u);
  EXPECT_EQ(s.ptr[5].type, MSGPACK_OBJECT_NIL);
  EXPECT_EQ(std::string(s.ptr[6].via.str.ptr, s.ptr[6].via.str.size), "GPU");
  EXPECT_EQ(events.ptr[1].via.array.size, 3u);
  EXPECT_EQ(events.ptr[2].via.array.size, 1u);
  EXPECT_NE(EngineHash(7), 7u);  // the engine's names are not the router's
  msgpack_unpacked_destroy(&u);
}

}  // namespace
}  // namespace tessera::engine
