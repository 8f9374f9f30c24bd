// ctest-labels: integration
// The gateway in front of real simulated engines on 127.0.0.1: OpenAI shapes through the proxy,
// streaming, bad requests, prompts over the context, retry before the first token, a replica
// killed mid-stream, shedding under a bounded overload, and vLLM's KV events over ZeroMQ.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "gateway/serving_harness.h"

namespace tessera::testing {
namespace {

using Json = nlohmann::json;

Json Services(const ServingProcess& gateway) { return GetPath(gateway.url, "/v1/services").json; }

bool ReplicaReady(const ServingProcess& gateway, const std::string& url) {
  Json s = Services(gateway);
  if (!s.is_object()) return false;
  for (const auto& r : s["services"][0]["replicas"]) {
    if (r["url"] == url) return r["ready"].get<bool>();
  }
  return false;
}

TEST(GatewayIntegration, ProxiesOpenAiShapesPlainAndStreamed) {
  Watchdog dog(std::chrono::seconds(60), "ProxiesOpenAiShapesPlainAndStreamed");
  ServingHarness h;
  auto e1 = h.StartEngine({"--time-scale", "0.05"});
  auto e2 = h.StartEngine({"--time-scale", "0.05"});
  auto gw = h.StartGateway({e1.url, e2.url}, {"--policy", "prefix"});
  ASSERT_GT(gw.port, 0) << h.Logs();

  Reply plain = PostJson(gw.url, "/v1/completions", CompletionBody(Words(40), 4, false));
  ASSERT_EQ(plain.status, 200) << plain.body << h.Logs();
  EXPECT_EQ(plain.json["object"], "text_completion");
  EXPECT_EQ(plain.json["choices"][0]["text"], " w0 w1 w2 w3");
  EXPECT_EQ(plain.json["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(plain.json["usage"]["prompt_tokens"], 40);
  EXPECT_EQ(plain.json["usage"]["completion_tokens"], 4);
  EXPECT_NE(plain.json["system_fingerprint"].get<std::string>().find("simulated"),
            std::string::npos);

  // The same prompt again: prefix routing sends it where its blocks are, which serves them
  // from cache (the last prompt token is always recomputed: 40 tokens = 2 full blocks of 16).
  Reply again = PostJson(gw.url, "/v1/completions", CompletionBody(Words(40), 4, false));
  ASSERT_EQ(again.status, 200);
  EXPECT_EQ(again.json["usage"]["prompt_tokens_details"]["cached_tokens"], 32);

  const std::string chat =
      Json{{"model", "sim-model"},
           {"messages", {{{"role", "user"}, {"content", "hello simulated world"}}}},
           {"max_tokens", 3},
           {"stream", true},
           {"stream_options", {{"include_usage", true}}}}
          .dump();
  Reply streamed = PostJson(gw.url, "/v1/chat/completions", chat);
  ASSERT_EQ(streamed.status, 200) << streamed.body;
  auto data = SseData(streamed.body);
  ASSERT_EQ(data.size(), 5u) << streamed.body;  // 3 tokens, usage, [DONE]
  std::string content;
  for (int i = 0; i < 3; ++i) {
    Json chunk = Json::parse(data[static_cast<std::size_t>(i)]);
    EXPECT_EQ(chunk["object"], "chat.completion.chunk");
    content += chunk["choices"][0]["delta"]["content"].get<std::string>();
    EXPECT_EQ(chunk["choices"][0]["finish_reason"].is_null(), i < 2);
  }
  EXPECT_EQ(Json::parse(data[0])["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(content, " w0 w1 w2");
  EXPECT_EQ(Json::parse(data[3])["usage"]["completion_tokens"], 3);
  EXPECT_EQ(data[4], "[DONE]");

  Reply models = GetPath(e1.url, "/v1/models");
  EXPECT_EQ(models.json["data"][0]["owned_by"], "tessera-engine-sim (simulated)");
  Reply engine_metrics = GetPath(e1.url, "/metrics");
  EXPECT_NE(engine_metrics.body.find("vllm:num_requests_running{model_name=\"sim-model\","
                                     "engine=\"simulated\"}"),
            std::string::npos);
  EXPECT_NE(engine_metrics.body.find("vllm:prefix_cache_hits_total"), std::string::npos);
  Reply gw_metrics = GetPath(gw.url, "/metrics");
  EXPECT_NE(
      gw_metrics.body.find("tessera_gateway_requests_total{service=\"default\",code=\"200\"} 3"),
      std::string::npos)
      << gw_metrics.body;
  EXPECT_NE(gw_metrics.body.find("tessera_gateway_ttft_seconds_count{service=\"default\"} 3"),
            std::string::npos);
  EXPECT_NE(gw_metrics.body.find("policy=\"prefix\",outcome=\"routed\"} 3"), std::string::npos);
}

std::int64_t IndexedBlocks(const ServingProcess& gateway, const std::string& url) {
  Json s = Services(gateway);
  if (!s.is_object()) return -1;
  for (const auto& r : s["services"][0]["replicas"]) {
    if (r["url"] == url) return r["indexedBlocks"].get<std::int64_t>();
  }
  return -1;
}

TEST(GatewayIntegration, FollowsVllmKvEventsOverZmq) {
  Watchdog dog(std::chrono::seconds(30), "FollowsVllmKvEventsOverZmq");
  ServingHarness h;
  const std::string zmq_a = "tcp://127.0.0.1:" + std::to_string(FreeLoopbackPort());
  const std::string zmq_b = "tcp://127.0.0.1:" + std::to_string(FreeLoopbackPort());
  auto a = h.StartEngine({"--time-scale", "0.02", "--kv-events-endpoint", zmq_a});
  auto b = h.StartEngine({"--time-scale", "0.02", "--kv-events-endpoint", zmq_b});
  ASSERT_GT(a.port, 0) << h.Logs();
  ASSERT_GT(b.port, 0) << h.Logs();
  auto gw = h.StartGateway({a.url, b.url},
                           {"--policy", "prefix", "--kv-events-endpoint", a.url + "=" + zmq_a,
                            "--kv-events-endpoint", b.url + "=" + zmq_b});
  ASSERT_GT(gw.port, 0) << h.Logs();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!(ReplicaReady(gw, a.url) && ReplicaReady(gw, b.url)) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // A prompt sent straight to replica b: the gateway never routed it, so only b's KV events
  // (vLLM's format: b's own block hashes, re-keyed from their token ids) can tell the gateway
  // that b holds its 4 blocks. A subscription joins a PUB socket a moment after it connects
  // (ZeroMQ's slow joiner), so a fresh prompt is tried again until the events arrive.
  std::string prompt;
  for (int attempt = 0; attempt < 10 && IndexedBlocks(gw, b.url) < 4; ++attempt) {
    prompt = Words(64, 1000 * attempt);
    ASSERT_EQ(PostJson(b.url, "/v1/completions", CompletionBody(prompt, 1, false)).status, 200);
    for (int i = 0; i < 10 && IndexedBlocks(gw, b.url) < 4; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(IndexedBlocks(gw, b.url), 4) << h.Logs();
  EXPECT_EQ(IndexedBlocks(gw, a.url), 0);
  // Through the gateway, the prompt extended by a block: prefix routing finds b (an unmatched
  // prompt would go to a, the lowest index), whose cache serves the 4 blocks.
  Reply routed = PostJson(gw.url, "/v1/completions",
                          CompletionBody(prompt + " " + Words(16, 90000), 1, false));
  ASSERT_EQ(routed.status, 200) << routed.body;
  EXPECT_EQ(routed.json["usage"]["prompt_tokens_details"]["cached_tokens"], 64);
  EXPECT_NE(GetPath(b.url, "/metrics").body.find("vllm:prefix_cache_hits_total"),
            std::string::npos);
}

TEST(GatewayIntegration, BadRequestsNameTheField) {
  Watchdog dog(std::chrono::seconds(60), "BadRequestsNameTheField");
  ServingHarness h;
  auto e = h.StartEngine({"--time-scale", "0.05", "--max-context", "64"});
  auto gw = h.StartGateway({e.url});
  struct Case {
    std::string path, body, param;
  };
  const std::vector<Case> cases = {
      {"/v1/completions", R"({"prompt":"a b"})", "model"},
      {"/v1/completions", R"({"model":"sim-model"})", "prompt"},
      {"/v1/completions", R"({"model":"sim-model","prompt":"a","max_tokens":0})", "max_tokens"},
      {"/v1/completions", R"({"model":"sim-model","prompt":"a","stream":"yes"})", "stream"},
      {"/v1/chat/completions", R"({"model":"sim-model","messages":[{"role":"user","content":7}]})",
       "messages[0].content"},
      {"/v1/completions", R"({"model":"sim-model","prompt":[1,-2]})", "prompt[1]"},
  };
  for (const ServingProcess* target : {&gw, &e}) {
    for (const Case& c : cases) {
      Reply r = PostJson(target->url, c.path, c.body);
      EXPECT_EQ(r.status, 400) << c.body;
      EXPECT_EQ(r.json["error"]["param"], c.param) << c.body << " -> " << r.body;
      EXPECT_EQ(r.json["error"]["type"], "invalid_request_error");
    }
    Reply not_json = PostJson(target->url, "/v1/completions", "{nope");
    EXPECT_EQ(not_json.status, 400);
    EXPECT_NE(not_json.json["error"]["message"].get<std::string>().find("JSON"), std::string::npos);
  }
  // Longer than the model's 64-token context: refused by the engine, relayed by the gateway.
  Reply too_long = PostJson(gw.url, "/v1/completions", CompletionBody(Words(60), 10, false));
  EXPECT_EQ(too_long.status, 400) << too_long.body;
  EXPECT_EQ(too_long.json["error"]["code"], "context_length_exceeded");
  EXPECT_NE(too_long.json["error"]["message"].get<std::string>().find("64"), std::string::npos);
  Reply fits = PostJson(gw.url, "/v1/completions", CompletionBody(Words(50), 10, false));
  EXPECT_EQ(fits.status, 200) << fits.body;
  Reply unknown_model = PostJson(e.url, "/v1/completions", R"({"model":"other","prompt":"a"})");
  EXPECT_EQ(unknown_model.status, 404);
  EXPECT_EQ(unknown_model.json["error"]["code"], "model_not_found");
}

TEST(GatewayIntegration, RetriesOnAnotherReplicaBeforeTheFirstToken) {
  Watchdog dog(std::chrono::seconds(60), "RetriesOnAnotherReplicaBeforeTheFirstToken");
  ServingHarness h;
  auto doomed = h.StartEngine({"--time-scale", "0.05"});
  auto e = h.StartEngine({"--time-scale", "0.05"});
  const std::string dead = doomed.url;
  // A long health interval, so that the dead replica is found by requests, not by the probe.
  auto gw =
      h.StartGateway({dead, e.url}, {"--policy", "round-robin", "--health-interval-ms", "60000"});
  ASSERT_TRUE(WaitFor([&] { return ReplicaReady(gw, dead); }, 10));
  h.Kill(doomed);  // dies while the gateway still counts it ready
  for (int i = 0; i < 4; ++i) {
    Reply r = PostJson(gw.url, "/v1/completions", CompletionBody(Words(8, i * 10), 2, i % 2 == 1));
    EXPECT_EQ(r.status, 200) << r.body << h.Logs();
  }
  EXPECT_FALSE(ReplicaReady(gw, dead));
  EXPECT_TRUE(ReplicaReady(gw, e.url));
  Reply metrics = GetPath(gw.url, "/metrics");
  EXPECT_NE(metrics.body.find("tessera_gateway_retries_total{service=\"default\"} 1"),
            std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find("tessera_gateway_replicas{service=\"default\",state=\"unready\"} 1"),
            std::string::npos);
}

TEST(GatewayIntegration, ReplicaKilledMidStreamEndsTheStreamWithAnErrorEvent) {
  Watchdog dog(std::chrono::seconds(60), "ReplicaKilledMidStream");
  ServingHarness h;
  auto victim = h.StartEngine({"--time-scale", "1"});
  auto other = h.StartEngine({"--time-scale", "0.05"});
  auto gw = h.StartGateway({victim.url, other.url},
                           {"--policy", "round-robin", "--health-interval-ms", "60000"});
  ASSERT_TRUE(WaitFor([&] { return ReplicaReady(gw, victim.url); }, 10));

  // Round-robin's first pick is the first replica: the victim. 2000 tokens take ~13 s there.
  std::string body;
  std::atomic<int> chunks{0};
  std::thread client([&] {
    httplib::Client c(gw.url);
    c.set_read_timeout(30, 0);
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.headers = {{"Content-Type", "application/json"}};
    req.body = CompletionBody(Words(16), 2000, true);
    req.content_receiver = [&](const char* data, std::size_t n, std::uint64_t, std::uint64_t) {
      body.append(data, n);
      ++chunks;
      return true;
    };
    httplib::Response res;
    httplib::Error err;
    c.send(req, res, err);
  });
  ASSERT_TRUE(WaitFor([&] { return chunks.load() >= 3; }, 20)) << h.Logs();
  h.Kill(victim);
  client.join();
  auto data = SseData(body);
  ASSERT_GE(data.size(), 2u) << body;
  EXPECT_EQ(data.back(), "[DONE]");
  Json error = Json::parse(data[data.size() - 2], nullptr, false);
  ASSERT_TRUE(error.contains("error")) << body.substr(body.size() > 600 ? body.size() - 600 : 0);
  EXPECT_EQ(error["error"]["code"], "replica_failed");
  EXPECT_FALSE(ReplicaReady(gw, victim.url));
  // Out of rotation: every request now goes to the other replica.
  for (int i = 0; i < 3; ++i) {
    Reply r = PostJson(gw.url, "/v1/completions", CompletionBody(Words(8), 2, false));
    EXPECT_EQ(r.status, 200) << r.body;
  }
  Reply metrics = GetPath(gw.url, "/metrics");
  EXPECT_NE(metrics.body.find("tessera_gateway_streams_failed_total{service=\"default\"} 1"),
            std::string::npos);
}

TEST(GatewayIntegration, ShedsABoundedOverloadWith503) {
  Watchdog dog(std::chrono::seconds(90), "ShedsABoundedOverload");
  ServingHarness h;
  // One slow replica with room for 2 queued requests: a burst of 24 cannot all wait there.
  auto e = h.StartEngine({"--time-scale", "1", "--max-waiting", "2"});
  auto gw = h.StartGateway({e.url}, {"--policy", "least-request"});
  std::vector<int> codes(24, 0);
  std::vector<std::thread> clients;
  for (std::size_t i = 0; i < codes.size(); ++i) {
    clients.emplace_back([&, i] {
      codes[i] = PostJson(gw.url, "/v1/completions",
                          CompletionBody(Words(2000, static_cast<int>(i) * 5000), 20, false), 60)
                     .status;
    });
  }
  for (auto& t : clients) t.join();
  int ok = 0, shed = 0;
  for (int c : codes) {
    ok += c == 200;
    shed += c == 503;
  }
  EXPECT_GT(ok, 0);
  EXPECT_GT(shed, 0);
  EXPECT_EQ(GetPath(gw.url, "/health").status, 200);
  EXPECT_EQ(PostJson(gw.url, "/v1/completions", CompletionBody(Words(8), 2, false)).status, 200);

  std::string all;
  for (int c : codes) all += std::to_string(c) + " ";
  EXPECT_EQ(ok + shed, 24) << all << h.Logs();
}

TEST(GatewayIntegration, TesseraPolicyRefusesEarlyWhatQueueingWouldMakeMissTheSlo) {
  Watchdog dog(std::chrono::seconds(90), "TesseraPolicyRefusesEarly");
  ServingHarness h;
  auto e = h.StartEngine({"--time-scale", "1"});
  auto gw = h.StartGateway({e.url}, {"--policy", "tessera", "--slo-ttft-ms", "300"});
  // One 2000-token prompt alone is predicted well within 300 ms (about 60 ms of prefill); a
  // burst of 12 queues 24000 prompt tokens, about 0.7 s of prefill: the late ones are refused.
  std::vector<Reply> replies(12);
  std::vector<std::thread> clients;
  for (std::size_t i = 0; i < replies.size(); ++i) {
    clients.emplace_back([&, i] {
      replies[i] = PostJson(gw.url, "/v1/completions",
                            CompletionBody(Words(2000, static_cast<int>(i) * 5000), 10, false), 60);
    });
  }
  for (auto& t : clients) t.join();
  int ok = 0, refused = 0;
  for (const Reply& r : replies) {
    ok += r.status == 200;
    if (r.status == 429) {
      ++refused;
      EXPECT_EQ(r.json["error"]["code"], "ttft_slo");
      EXPECT_NE(r.body.find("TTFT SLO"), std::string::npos) << r.body;
    }
  }
  EXPECT_EQ(ok + refused, 12);
  EXPECT_GT(ok, 0);
  EXPECT_GT(refused, 0);
  Reply metrics = GetPath(gw.url, "/metrics");
  EXPECT_NE(metrics.body.find("policy=\"tessera\",outcome=\"rejected_ttft_slo\"} " +
                              std::to_string(refused)),
            std::string::npos)
      << metrics.body;
  // Once the burst has drained, a request is served again.
  EXPECT_EQ(PostJson(gw.url, "/v1/completions", CompletionBody(Words(100), 2, false)).status, 200);
}

}  // namespace
}  // namespace tessera::testing
