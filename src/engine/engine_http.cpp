#include "engine/engine_http.h"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>

#include "core/metrics_text.h"
#include "engine/openai_responses.h"
#include "serve/prompt_tokens.h"
#include "spec/openai_request.h"

namespace tessera::engine {

namespace {

using Json = nlohmann::json;

constexpr int kWaitSliceMs = 250;  // how often a waiting handler checks its client is there

void SendError(httplib::Response& res, const OpenAiError& e) {
  res.status = e.http_status;
  if (e.http_status == 503) res.set_header("Retry-After", "1");
  res.set_content(OpenAiErrorJson(e).dump() + "\n", "application/json");
}

OpenAiError ErrorOf(int status, std::string type, std::string param, std::string message,
                    std::string code = "") {
  return OpenAiError{status, std::move(type), std::move(param), std::move(message),
                     std::move(code)};
}

std::int64_t UnixSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Sse(const Json& j) { return "data: " + j.dump() + "\n\n"; }

struct StreamState {
  std::shared_ptr<RequestStream> stream;
  ResponseIdentity who;
  Usage usage;
  bool include_usage = false;
  std::int64_t sent = 0;
};

// Writes the tokens released since the last call; false when the client is gone.
bool PumpStream(StreamState& s, httplib::DataSink& sink) {
  const RequestStream::Progress p = s.stream->WaitPast(s.sent, kWaitSliceMs);
  if (p.aborted) {
    const Json err = OpenAiErrorJson(
        ErrorOf(500, "server_error", "", "the simulated engine stopped before finishing"));
    const std::string text = Sse(err) + "data: [DONE]\n\n";
    sink.write(text.data(), text.size());
    sink.done();
    return true;
  }
  std::string out;
  for (; s.sent < p.tokens; ++s.sent) {
    const bool last = p.finished && s.sent + 1 == p.tokens;
    out += Sse(ChunkJson(s.who, OutputTokenText(s.sent), s.sent == 0, last));
  }
  if (!out.empty() && !sink.write(out.data(), out.size())) return false;
  if (p.finished && s.sent == p.tokens) {
    s.usage.completion_tokens = p.tokens;
    s.usage.cached_tokens = s.stream->cached_tokens();
    std::string tail;
    if (s.include_usage) tail += Sse(UsageChunkJson(s.who, s.usage));
    tail += "data: [DONE]\n\n";
    if (!sink.write(tail.data(), tail.size())) return false;
    sink.done();
    return true;
  }
  return sink.is_writable();
}

void HandleCompletion(EngineRunner& runner, const EngineHttpInfo& info, OpenAiEndpoint endpoint,
                      const httplib::Request& req, httplib::Response& res) {
  auto parsed = ParseOpenAiRequest(req.body, endpoint);
  if (!parsed) return SendError(res, parsed.error());
  const OpenAiRequest& r = *parsed;
  if (r.model != info.model) {
    return SendError(res, ErrorOf(404, "invalid_request_error", "model",
                                  "The model `" + r.model +
                                      "` does not exist (this simulated "
                                      "engine serves `" +
                                      info.model + "`)",
                                  "model_not_found"));
  }
  std::vector<std::int32_t> tokens =
      r.has_token_ids ? r.prompt_token_ids : serve::TokenizePrompt(r.prompt_text);
  const char* prompt_field = endpoint == OpenAiEndpoint::kCompletions ? "prompt" : "messages";
  if (tokens.empty()) {
    return SendError(res, ErrorOf(400, "invalid_request_error", prompt_field,
                                  "must contain at least one token"));
  }
  const std::int64_t prompt_tokens = static_cast<std::int64_t>(tokens.size());
  const std::int64_t limit = runner.options().profile.max_context_tokens;
  if (prompt_tokens + r.max_tokens > limit) {
    return SendError(res, ErrorOf(400, "invalid_request_error", prompt_field,
                                  "This model's maximum context length is " +
                                      std::to_string(limit) + " tokens. However, you requested " +
                                      std::to_string(prompt_tokens + r.max_tokens) + " tokens (" +
                                      std::to_string(prompt_tokens) + " in the prompt, " +
                                      std::to_string(r.max_tokens) + " in the completion).",
                                  "context_length_exceeded"));
  }
  auto submitted = runner.Submit(tokens, r.max_tokens);
  if (submitted.refusal == EngineRunner::Refusal::kTooLong) {
    return SendError(res, ErrorOf(400, "invalid_request_error", prompt_field,
                                  "the prompt and completion need more KV cache blocks than "
                                  "this simulated engine has",
                                  "context_length_exceeded"));
  }
  if (submitted.refusal == EngineRunner::Refusal::kQueueFull) {
    return SendError(
        res, ErrorOf(503, "server_error", "", "the simulated engine's queue is full; retry later",
                     "queue_full"));
  }
  static std::atomic<std::int64_t> next_response{1};
  ResponseIdentity who{(endpoint == OpenAiEndpoint::kChatCompletions ? "chatcmpl-" : "cmpl-") +
                           std::to_string(next_response++),
                       r.model, UnixSeconds(), endpoint};
  res.set_header("X-Tessera-Engine", "simulated");
  if (r.stream) {
    auto state = std::make_shared<StreamState>();
    state->stream = submitted.stream;
    state->who = who;
    state->usage.prompt_tokens = prompt_tokens;
    state->include_usage = r.include_usage;
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [state](std::size_t, httplib::DataSink& sink) { return PumpStream(*state, sink); });
    return;
  }
  RequestStream::Progress p;
  do {
    p = submitted.stream->WaitPast(p.tokens, kWaitSliceMs);
  } while (!p.finished && !p.aborted);
  if (p.aborted) {
    return SendError(
        res, ErrorOf(500, "server_error", "", "the simulated engine stopped before finishing"));
  }
  std::string text;
  for (std::int64_t i = 0; i < p.tokens; ++i) text += OutputTokenText(i);
  Usage usage{prompt_tokens, p.tokens, submitted.stream->cached_tokens()};
  res.set_content(CompletionJson(who, text, usage).dump() + "\n", "application/json");
}

// vLLM's own names first, for dashboards and autoscalers written against vLLM (promtool's
// linter does not accept their colons), then the same figures under tessera_engine_ names.
std::string MetricsText(const EngineCounters& c, const EngineHttpInfo& info) {
  MetricsWriter out;
  const MetricLabels vllm = {{"model_name", info.model}, {"engine", "simulated"}};
  auto metric = [&](const char* name, MetricType type, const char* help, double value) {
    out.Family(name, type, help);
    out.Sample(vllm, value);
  };
  const auto counter = MetricType::kCounter;
  const auto gauge = MetricType::kGauge;
  auto n = [](std::int64_t v) { return static_cast<double>(v); };
  metric("vllm:num_requests_running", gauge, "Requests in the batch (simulated engine).",
         c.running);
  metric("vllm:num_requests_waiting", gauge, "Requests waiting for admission.", c.waiting);
  metric("vllm:gpu_cache_usage_perc", gauge, "KV cache usage, 1 = 100%.", c.kv_usage);
  metric("vllm:prefix_cache_queries_total", counter, "Prompt tokens looked up in the cache.",
         n(c.prefix_queries_tokens));
  metric("vllm:prefix_cache_hits_total", counter, "Prompt tokens served from the cache.",
         n(c.prefix_hits_tokens));
  metric("vllm:prompt_tokens_total", counter, "Prompt tokens received.", n(c.prompt_tokens));
  metric("vllm:generation_tokens_total", counter, "Tokens generated.", n(c.generation_tokens));
  metric("vllm:request_success_total", counter, "Requests finished.", n(c.successes));

  const MetricLabels ours = {{"model", info.model}, {"simulated", "true"}};
  auto own = [&](const char* name, MetricType type, const char* help, double value) {
    out.Family(name, type, help);
    out.Sample(ours, value);
  };
  own("tessera_engine_requests_running", gauge, "Requests in the simulated engine's batch.",
      c.running);
  own("tessera_engine_requests_waiting", gauge, "Requests waiting for admission.", c.waiting);
  own("tessera_engine_kv_cache_usage_ratio", gauge, "KV cache blocks in use, 0..1.", c.kv_usage);
  own("tessera_engine_prefix_cache_queried_tokens_total", counter,
      "Prompt tokens looked up in the prefix cache.", n(c.prefix_queries_tokens));
  own("tessera_engine_prefix_cache_hit_tokens_total", counter,
      "Prompt tokens served from the prefix cache.", n(c.prefix_hits_tokens));
  own("tessera_engine_prompt_tokens_total", counter, "Prompt tokens received.", n(c.prompt_tokens));
  own("tessera_engine_generation_tokens_total", counter, "Tokens generated.",
      n(c.generation_tokens));
  own("tessera_engine_requests_succeeded_total", counter, "Requests finished.", n(c.successes));
  own("tessera_engine_steps_total", counter, "Engine iterations (prefill and decode steps) run.",
      n(c.steps));
  own("tessera_engine_timeline_restarts_total", counter,
      "Steps that started too late to keep the modelled timeline (it restarted then).",
      n(c.timeline_restarts));
  own("tessera_engine_timeline_lost_seconds_total", counter,
      "Wall seconds the modelled timeline lost to those late starts.", c.timeline_lost_seconds);
  out.Family("tessera_engine_rejected_total", counter,
             "Requests refused by the simulated engine, by reason.");
  for (auto [reason, count] : {std::pair{"queue_full", c.rejected_queue_full},
                               std::pair{"too_long", c.rejected_too_long}}) {
    MetricLabels labels = ours;
    labels.emplace_back("reason", reason);
    out.Sample(labels, n(count));
  }
  return out.Take();
}

bool PumpKvEvents(KvEventFeed& feed, httplib::DataSink& sink) {
  std::vector<std::string> messages;
  const bool open = feed.Next(&messages, 1000);
  std::string out;
  for (const auto& m : messages) out += "data: " + m + "\n\n";
  if (out.empty()) out = ": keepalive\n\n";  // lets a closed client be noticed
  if (!sink.write(out.data(), out.size())) return false;
  if (!open) sink.done();
  return true;
}

}  // namespace

void RegisterEngineApi(httplib::Server& server, EngineRunner& runner, const EngineHttpInfo& info) {
  server.Post("/v1/completions",
              [&runner, &info](const httplib::Request& req, httplib::Response& res) {
                HandleCompletion(runner, info, OpenAiEndpoint::kCompletions, req, res);
              });
  server.Post("/v1/chat/completions",
              [&runner, &info](const httplib::Request& req, httplib::Response& res) {
                HandleCompletion(runner, info, OpenAiEndpoint::kChatCompletions, req, res);
              });
  server.Get("/v1/models", [&runner, &info](const httplib::Request&, httplib::Response& res) {
    Json model = {{"id", info.model},
                  {"object", "model"},
                  {"created", UnixSeconds()},
                  {"owned_by", "tessera-engine-sim (simulated)"},
                  {"root", info.model},
                  {"max_model_len", runner.options().profile.max_context_tokens},
                  {"simulated", true},
                  {"engine_profile", info.profile_name},
                  {"block_tokens", runner.options().block_tokens}};
    res.set_content(Json{{"object", "list"}, {"data", Json::array({model})}}.dump() + "\n",
                    "application/json");
  });
  server.Get("/health", [](const httplib::Request&, httplib::Response& res) {
    res.set_header("X-Tessera-Engine", "simulated");
    res.status = 200;
  });
  server.Get("/metrics", [&runner, &info](const httplib::Request&, httplib::Response& res) {
    res.set_content(MetricsText(runner.Counters(), info), MetricsWriter::kContentType);
  });
  server.Get("/v1/kv_events", [&runner](const httplib::Request&, httplib::Response& res) {
    auto feed = runner.SubscribeKvEvents();
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [feed](std::size_t, httplib::DataSink& sink) { return PumpKvEvents(*feed, sink); });
  });
}

}  // namespace tessera::engine
