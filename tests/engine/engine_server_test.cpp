// ctest-labels: integration
// tessera-engine-sim's server on loopback: the OpenAI-compatible endpoints with and without
// streaming, vLLM-named metrics with prefix-cache hits, OpenAI-style errors for malformed
// requests and prompts past the context, and 429 when the queue is full.
#include "engine/engine_server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace tessera::engine {
namespace {

EngineServerOptions FastOptions() {
  EngineServerOptions o;
  o.profile.step_base_us = 2000;  // 2 ms steps keep the test short
  o.profile.prefill_us_per_token = 1;
  o.profile.max_context_tokens = 64;
  return o;
}

TEST(EngineServer, CompletionsChatStreamingModelsHealth) {
  EngineServer server(FastOptions());
  ASSERT_TRUE(server.Start("127.0.0.1", 0).has_value());
  httplib::Client c("127.0.0.1", server.port());
  auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_NE(health->body.find("simulated"), std::string::npos);

  auto models = c.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(nlohmann::json::parse(models->body)["data"][0]["owned_by"],
            "tessera-engine-sim (simulated)");

  auto done =
      c.Post("/v1/completions", R"({"prompt": "a b c d", "max_tokens": 3})", "application/json");
  ASSERT_TRUE(done);
  ASSERT_EQ(done->status, 200) << done->body;
  const auto body = nlohmann::json::parse(done->body);
  EXPECT_EQ(body["choices"][0]["text"], " tok0 tok1 tok2");
  EXPECT_EQ(body["usage"]["prompt_tokens"], 4);
  EXPECT_EQ(body["usage"]["completion_tokens"], 3);
  EXPECT_EQ(body["system_fingerprint"], "tessera-engine-sim (simulated)");

  std::string events;
  auto streamed = c.Post(
      "/v1/chat/completions",
      R"({"messages": [{"role": "user", "content": "hello"}], "max_tokens": 2, "stream": true})",
      "application/json");
  ASSERT_TRUE(streamed);
  ASSERT_EQ(streamed->status, 200);
  EXPECT_EQ(streamed->get_header_value("Content-Type"), "text/event-stream");
  // Two chunks with a delta each, the last with finish_reason, then [DONE].
  const std::string& s = streamed->body;
  EXPECT_NE(s.find("\"delta\":{\"content\":\" tok0\""), std::string::npos) << s;
  EXPECT_NE(s.find("\"finish_reason\":\"length\""), std::string::npos) << s;
  EXPECT_NE(s.rfind("data: [DONE]\n\n"), std::string::npos) << s;

  auto chat = c.Post("/v1/chat/completions",
                     R"({"messages": [{"role": "user", "content": "hello"}], "max_tokens": 1})",
                     "application/json");
  ASSERT_TRUE(chat);
  EXPECT_EQ(nlohmann::json::parse(chat->body)["choices"][0]["message"]["content"], " tok0");
  server.Stop();
}

TEST(EngineServer, MetricsCountPrefixHits) {
  EngineServer server(FastOptions());
  ASSERT_TRUE(server.Start("127.0.0.1", 0).has_value());
  httplib::Client c("127.0.0.1", server.port());
  // 40 words = 2 full blocks of 16 tokens; the second request finds both cached: 32 hit tokens.
  std::string prompt;
  for (int i = 0; i < 40; ++i) prompt += "w" + std::to_string(i) + " ";
  const std::string req = nlohmann::json{{"prompt", prompt}, {"max_tokens", 1}}.dump();
  ASSERT_EQ(c.Post("/v1/completions", req, "application/json")->status, 200);
  ASSERT_EQ(c.Post("/v1/completions", req, "application/json")->status, 200);
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("vllm:prefix_cache_queries_total{model_name=\"simulated-llama3-8b\"} 80"),
            std::string::npos)
      << m->body;
  EXPECT_NE(m->body.find("vllm:prefix_cache_hits_total{model_name=\"simulated-llama3-8b\"} 32"),
            std::string::npos)
      << m->body;
  EXPECT_NE(m->body.find("vllm:num_requests_running"), std::string::npos);
  EXPECT_NE(m->body.find("vllm:gpu_cache_usage_perc"), std::string::npos);
  server.Stop();
}

TEST(EngineServer, BadRequestsGetOpenAiErrors) {
  EngineServer server(FastOptions());
  ASSERT_TRUE(server.Start("127.0.0.1", 0).has_value());
  httplib::Client c("127.0.0.1", server.port());
  const auto error = [&](const char* path, const std::string& body) {
    auto r = c.Post(path, body, "application/json");
    return std::pair{r->status, nlohmann::json::parse(r->body)["error"]};
  };
  auto [s1, e1] = error("/v1/completions", "{not json");
  EXPECT_EQ(s1, 400);
  EXPECT_EQ(e1["type"], "invalid_request_error");
  auto [s2, e2] = error("/v1/chat/completions", R"({"messages": [{"role": "user"}]})");
  EXPECT_EQ(s2, 400);
  EXPECT_EQ(e2["param"], "messages");
  EXPECT_EQ(e2["message"], "messages[0]: needs a string role and a string content");
  auto [s3, e3] = error("/v1/completions", R"({"prompt": "x", "max_tokens": 0})");
  EXPECT_EQ(s3, 400);
  EXPECT_EQ(e3["param"], "max_tokens");
  // 70 words + 1 output token > the 64-token context.
  std::string longer;
  for (int i = 0; i < 70; ++i) longer += "w ";
  auto [s4, e4] = error("/v1/completions", nlohmann::json{{"prompt", longer}}.dump());
  EXPECT_EQ(s4, 400);
  EXPECT_NE(e4["message"].get<std::string>().find("exceed the model's context"), std::string::npos);
  server.Stop();
}

TEST(EngineServer, FullQueueSheds429) {
  EngineServerOptions o = FastOptions();
  o.max_waiting = 1;
  o.profile.max_batch_sequences = 1;
  o.profile.step_base_us = 20000;  // slow steps: the queue fills before the first finishes
  EngineServer server(o);
  ASSERT_TRUE(server.Start("127.0.0.1", 0).has_value());
  std::vector<int> statuses(6, 0);
  std::vector<std::thread> clients;
  for (int i = 0; i < 6; ++i) {
    clients.emplace_back([&, i] {
      httplib::Client c("127.0.0.1", server.port());
      auto r = c.Post("/v1/completions", R"({"prompt": "a", "max_tokens": 5})", "application/json");
      statuses[i] = r ? r->status : -1;
    });
  }
  for (auto& t : clients) t.join();
  int ok = 0, shed = 0;
  for (int s : statuses) {
    ok += s == 200;
    shed += s == 429;
  }
  EXPECT_GE(ok, 1);
  EXPECT_GE(shed, 1);
  EXPECT_EQ(ok + shed, 6);
  server.Stop();
}

}  // namespace
}  // namespace tessera::engine
