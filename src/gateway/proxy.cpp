#include "gateway/proxy.h"

#include <httplib.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "gateway/upstream.h"
#include "serve/block_hash.h"
#include "serve/prompt_tokens.h"
#include "spec/openai_request.h"

namespace tessera::gateway {

namespace {

using Json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

constexpr int kWaitSliceMs = 500;

double SecondsSince(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

void SendError(httplib::Response& res, int status, const std::string& type,
               const std::string& param, const std::string& message, const std::string& code) {
  res.status = status;
  if (status == 429 || status == 503) res.set_header("Retry-After", "1");
  res.set_content(OpenAiErrorJson({status, type, param, message, code}).dump() + "\n",
                  "application/json");
}

// Bounds the requests the gateway holds at once.
class InFlight {
 public:
  InFlight(std::atomic<std::int32_t>& n, std::int32_t limit) : n_(n) {
    admitted_ = n_.fetch_add(1) < limit;
  }
  ~InFlight() { n_.fetch_sub(1); }
  bool admitted() const { return admitted_; }

 private:
  std::atomic<std::int32_t>& n_;
  bool admitted_ = false;
};

// Moves the complete SSE events ("...\n\n") at the front of `carry` into `out`.
void TakeCompleteEvents(std::string& carry, std::string* out) {
  const auto end = carry.rfind("\n\n");
  if (end == std::string::npos) return;
  out->append(carry, 0, end + 2);
  carry.erase(0, end + 2);
}

// One streamed response being relayed: ends the request's load on its replica exactly once.
struct StreamRelay {
  std::shared_ptr<UpstreamStream> upstream;
  std::shared_ptr<ServiceRoutes> service;
  ServiceRoutes::Pick pick;
  GatewayMetrics* metrics = nullptr;
  std::string service_name;
  std::string ready;  // complete events not yet written
  std::string carry;  // a partial event
  bool upstream_done = false;
  bool finished = false;

  void Finish() {
    if (finished) return;
    finished = true;
    service->Finished(pick, true);
  }
  ~StreamRelay() {
    upstream->Cancel();
    Finish();
  }
};

bool Relay(StreamRelay& s, httplib::DataSink& sink) {
  if (!s.ready.empty()) {
    if (!sink.write(s.ready.data(), s.ready.size())) {
      s.upstream->Cancel();
      return false;
    }
    s.ready.clear();
  }
  if (s.upstream_done) {
    if (!s.carry.empty()) sink.write(s.carry.data(), s.carry.size());
    s.Finish();
    sink.done();
    return true;
  }
  std::string chunk;
  const UpstreamStream::State st = s.upstream->Wait(&chunk, kWaitSliceMs);
  s.carry += chunk;
  TakeCompleteEvents(s.carry, &s.ready);
  if (st == UpstreamStream::State::kFailed) {
    // The replica died mid-stream: what it sent whole goes out, then an error event.
    const std::string reason = "replica " + s.pick.url + " failed mid-stream (" +
                               s.upstream->error() + "); the response is incomplete";
    s.service->MarkDead(s.pick.url, reason);
    s.metrics->StreamFailed(s.service_name);
    s.ready +=
        "data: " + OpenAiErrorJson({502, "server_error", "", reason, "replica_failed"}).dump() +
        "\n\ndata: [DONE]\n\n";
    sink.write(s.ready.data(), s.ready.size());
    s.ready.clear();
    s.Finish();
    sink.done();
    return true;
  }
  if (st == UpstreamStream::State::kDone) s.upstream_done = true;
  return sink.is_writable();
}

struct Attempt {
  enum class Outcome { kAnswered, kRetry } outcome = Outcome::kRetry;
  std::string error;
};

Attempt ProxyPlain(GatewayContext& ctx, const std::shared_ptr<ServiceRoutes>& service,
                   const std::string& service_name, const ServiceRoutes::Pick& pick,
                   const httplib::Request& req, httplib::Response& res,
                   SteadyClock::time_point start) {
  UpstreamReply reply =
      PostUpstream(pick.url, req.path, req.body, req.get_header_value("Authorization"));
  if (!reply.connected) {
    service->MarkDead(pick.url, "request failed: " + reply.error);
    service->Finished(pick, false);
    return {Attempt::Outcome::kRetry, pick.url + ": " + reply.error};
  }
  if (reply.status == 503) {  // the replica sheds load: another may have room
    service->Finished(pick, false);
    return {Attempt::Outcome::kRetry, pick.url + ": 503"};
  }
  service->FirstToken(pick);
  service->Finished(pick, true);
  if (reply.status == 200) ctx.metrics->Ttft(service_name, SecondsSince(start));
  res.status = reply.status;
  res.set_header("X-Tessera-Replica", pick.url);
  res.set_content(std::move(reply.body),
                  reply.content_type.empty() ? "application/json" : reply.content_type);
  return {Attempt::Outcome::kAnswered, ""};
}

Attempt ProxyStream(GatewayContext& ctx, const std::shared_ptr<ServiceRoutes>& service,
                    const std::string& service_name, const ServiceRoutes::Pick& pick,
                    const httplib::Request& req, httplib::Response& res,
                    SteadyClock::time_point start) {
  auto upstream =
      UpstreamStream::Start(pick.url, req.path, req.body, req.get_header_value("Authorization"));
  std::string carry, first;
  UpstreamStream::State st;
  // Wait for the first whole event (the first token) or the end.
  do {
    std::string chunk;
    st = upstream->Wait(&chunk, kWaitSliceMs);
    carry += chunk;
    if (upstream->status() == 200) TakeCompleteEvents(carry, &first);
  } while (first.empty() && st != UpstreamStream::State::kDone &&
           st != UpstreamStream::State::kFailed);
  const int status = upstream->status();
  if (st == UpstreamStream::State::kFailed && first.empty()) {
    service->MarkDead(pick.url, "failed before the first token: " + upstream->error());
    service->Finished(pick, false);
    return {Attempt::Outcome::kRetry, pick.url + ": " + upstream->error()};
  }
  if (status == 503 && st == UpstreamStream::State::kDone) {
    service->Finished(pick, false);
    return {Attempt::Outcome::kRetry, pick.url + ": 503"};
  }
  if (status != 200) {  // an error answer (400, 404, ...): relayed whole
    service->Finished(pick, false);
    res.status = status;
    res.set_header("X-Tessera-Replica", pick.url);
    res.set_content(
        carry, upstream->content_type().empty() ? "application/json" : upstream->content_type());
    return {Attempt::Outcome::kAnswered, ""};
  }
  service->FirstToken(pick);
  ctx.metrics->Ttft(service_name, SecondsSince(start));
  auto relay = std::make_shared<StreamRelay>();
  relay->upstream = upstream;
  relay->service = service;
  relay->pick = pick;
  relay->metrics = ctx.metrics;
  relay->service_name = service_name;
  relay->ready = std::move(first);
  relay->carry = std::move(carry);
  relay->upstream_done = st == UpstreamStream::State::kDone;
  res.status = 200;
  res.set_header("X-Tessera-Replica", pick.url);
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [relay](std::size_t, httplib::DataSink& sink) { return Relay(*relay, sink); });
  return {Attempt::Outcome::kAnswered, ""};
}

void Refuse(GatewayContext& ctx, const ServiceRoutes& service, const std::string& name,
            const ServiceRoutes::Pick& pick, const std::string& last_error,
            httplib::Response& res) {
  if (pick.reason == serve::RejectReason::kTtftSlo) {
    ctx.metrics->Decision(name, service.policy_name(), "rejected_ttft_slo");
    const ServiceConfig c = service.config();
    char predicted[64];
    std::snprintf(predicted, sizeof predicted, "%.0f", pick.predicted_ttft_ms);
    SendError(res, 429, "rate_limit_exceeded", "",
              "tessera policy: no replica of " + name +
                  " is predicted to reach the first token within the TTFT SLO (best predicted " +
                  predicted + " ms > " + std::to_string(static_cast<int>(c.slo_ttft_ms)) +
                  " ms); retry later",
              "ttft_slo");
  } else {
    ctx.metrics->Decision(name, service.policy_name(), "no_ready_replica");
    SendError(res, 503, "server_error", "",
              last_error.empty()
                  ? "no ready replica for " + name
                  : "no replica of " + name +
                        " could serve the request (last failure: " + last_error + ")",
              last_error.empty() ? "no_ready_replica" : "replicas_failed");
  }
}

// Scale from zero: a service with no ready replica holds the request (counted as awaiting a
// replica in GET /v1/services, which the controller's autoscaler reads) until one is ready or
// `wait_ms` passed; then it is routed, or refused as without the wait.
void AwaitReadyReplica(ServiceRoutes& service, int wait_ms) {
  if (service.HasReadyReplica()) return;
  service.AwaitReplica(1);
  const auto deadline = SteadyClock::now() + std::chrono::milliseconds(wait_ms);
  while (!service.HasReadyReplica() && SteadyClock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  service.AwaitReplica(-1);
}

void HandleInference(GatewayContext& ctx, OpenAiEndpoint endpoint, const httplib::Request& req,
                     httplib::Response& res) {
  const auto start = SteadyClock::now();
  auto parsed = ParseOpenAiRequest(req.body, endpoint);
  if (!parsed) {
    ctx.metrics->Request("", parsed.error().http_status);
    res.status = parsed.error().http_status;
    res.set_content(OpenAiErrorJson(parsed.error()).dump() + "\n", "application/json");
    return;
  }
  auto service = ctx.registry->Find(parsed->model);
  if (!service) {
    ctx.metrics->Request("", 404);
    return SendError(res, 404, "invalid_request_error", "model",
                     "The model `" + parsed->model + "` is not served by this gateway",
                     "model_not_found");
  }
  const std::string name = service->config().name;
  InFlight guard(ctx.in_flight, ctx.options.max_in_flight);
  if (!guard.admitted()) {
    ctx.metrics->Request(name, 503);
    return SendError(res, 503, "server_error", "",
                     "the gateway is at its in-flight limit; retry later", "gateway_overloaded");
  }
  if (ctx.options.cold_start_wait_ms > 0)
    AwaitReadyReplica(*service, ctx.options.cold_start_wait_ms);
  const std::vector<std::int32_t> tokens =
      parsed->has_token_ids ? parsed->prompt_token_ids : serve::TokenizePrompt(parsed->prompt_text);
  const std::vector<serve::BlockHash> blocks =
      serve::ChainBlockHashes(tokens, service->block_tokens());
  std::vector<int> tried;
  std::string last_error;
  for (int attempt = 0; attempt < ctx.options.max_attempts; ++attempt) {
    const ServiceRoutes::Pick pick =
        service->Route(blocks, static_cast<std::int64_t>(tokens.size()), parsed->max_tokens, tried);
    if (pick.slot < 0) {
      Refuse(ctx, *service, name, pick, last_error, res);
      ctx.metrics->Request(name, res.status);
      return;
    }
    ctx.metrics->Decision(name, service->policy_name(), "routed");
    if (attempt == 0) ctx.metrics->Tokens(name, pick.prompt_tokens, pick.matched_tokens);
    if (attempt > 0) ctx.metrics->Retry(name);
    tried.push_back(pick.slot);
    const Attempt a = parsed->stream ? ProxyStream(ctx, service, name, pick, req, res, start)
                                     : ProxyPlain(ctx, service, name, pick, req, res, start);
    if (a.outcome == Attempt::Outcome::kAnswered) {
      ctx.metrics->Request(name, res.status);
      return;
    }
    last_error = a.error;
  }
  SendError(res, 503, "server_error", "",
            "no replica of " + name + " could serve the request after " +
                std::to_string(ctx.options.max_attempts) + " tries (last failure: " + last_error +
                ")",
            "replicas_failed");
  ctx.metrics->Request(name, 503);
}

Json ServicesJson(const ServiceRegistry& registry) {
  Json services = Json::array();
  for (const auto& s : registry.All()) {
    const ServiceConfig c = s->config();
    Json replicas = Json::array();
    for (const ReplicaView& r : s->Replicas()) {
      Json j = {{"url", r.url},
                {"ready", r.ready},
                {"inFlight", r.in_flight},
                {"waiting", r.waiting},
                {"indexedBlocks", r.indexed_blocks}};
      if (!r.last_error.empty()) j["lastError"] = r.last_error;
      replicas.push_back(j);
    }
    services.push_back({{"name", c.name},
                        {"models", c.models},
                        {"policy", c.policy},
                        {"blockTokens", c.block_tokens},
                        {"sloTtftMs", c.slo_ttft_ms},
                        {"sloTbtMs", c.slo_tbt_ms},
                        {"awaitingReplica", s->awaiting_replica()},
                        {"replicas", replicas}});
  }
  return {{"services", services}};
}

void WriteReplicaGauges(const ServiceRegistry& registry, MetricsWriter& out) {
  out.Family("tessera_gateway_replicas", MetricType::kGauge,
             "Replicas of each service by readiness.");
  for (const auto& s : registry.All()) {
    int ready = 0, unready = 0;
    for (const ReplicaView& r : s->Replicas()) (r.ready ? ready : unready)++;
    const std::string name = s->config().name;
    out.Sample({{"service", name}, {"state", "ready"}}, ready);
    out.Sample({{"service", name}, {"state", "unready"}}, unready);
  }
}

}  // namespace

void RegisterGatewayApi(httplib::Server& server, GatewayContext& ctx) {
  server.Post("/v1/completions", [&ctx](const httplib::Request& req, httplib::Response& res) {
    HandleInference(ctx, OpenAiEndpoint::kCompletions, req, res);
  });
  server.Post("/v1/chat/completions", [&ctx](const httplib::Request& req, httplib::Response& res) {
    HandleInference(ctx, OpenAiEndpoint::kChatCompletions, req, res);
  });
  server.Get("/v1/models", [&ctx](const httplib::Request&, httplib::Response& res) {
    Json data = Json::array();
    for (const auto& s : ctx.registry->All()) {
      const ServiceConfig c = s->config();
      data.push_back({{"id", c.models.empty() ? c.name : c.models.front()},
                      {"object", "model"},
                      {"owned_by", "tessera-gateway"},
                      {"service", c.name}});
    }
    res.set_content(Json{{"object", "list"}, {"data", data}}.dump() + "\n", "application/json");
  });
  server.Get("/health", [](const httplib::Request&, httplib::Response& res) { res.status = 200; });
  server.Get("/v1/services", [&ctx](const httplib::Request&, httplib::Response& res) {
    res.set_content(ServicesJson(*ctx.registry).dump() + "\n", "application/json");
  });
  server.Get("/metrics", [&ctx](const httplib::Request&, httplib::Response& res) {
    MetricsWriter out;
    ctx.metrics->Write(out);
    WriteReplicaGauges(*ctx.registry, out);
    res.set_content(out.Take(), MetricsWriter::kContentType);
  });
}

}  // namespace tessera::gateway
