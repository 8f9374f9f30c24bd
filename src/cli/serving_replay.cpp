#include "cli/serving_replay.h"

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "sim/serving/replay_prompts.h"

namespace tessera::cli {

namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// The SSE `data:` payloads complete in `carry` (consumed), in order.
std::vector<std::string> TakeEvents(std::string& carry) {
  std::vector<std::string> out;
  std::size_t end;
  while ((end = carry.find("\n\n")) != std::string::npos) {
    std::string_view event(carry.data(), end);
    if (event.starts_with("data: ")) out.emplace_back(event.substr(6));
    carry.erase(0, end + 2);
  }
  return out;
}

ReplayOutcome SendOne(const std::string& body, const ReplayOptions& o) {
  ReplayOutcome r;
  httplib::Client client(o.gateway_url);
  client.set_connection_timeout(5, 0);
  client.set_read_timeout(o.timeout_s, 0);
  client.set_tcp_nodelay(true);
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.headers = {{"Content-Type", "application/json"}};
  req.body = body;
  std::string carry;
  const auto sent = Clock::now();
  req.content_receiver = [&](const char* data, std::size_t n, std::uint64_t, std::uint64_t) {
    const auto now = Clock::now();
    carry.append(data, n);
    for (const std::string& e : TakeEvents(carry)) {
      if (e == "[DONE]") continue;
      const Json j = Json::parse(e, nullptr, false);
      if (!j.is_object()) continue;
      if (j.contains("error")) r.error = j["error"].value("message", "error event");
      if (j.contains("choices") && !j["choices"].empty() && r.ttft_ms < 0) {
        r.ttft_ms = std::chrono::duration<double, std::milli>(now - sent).count() / o.time_scale;
      }
      if (j.contains("usage") && j["usage"].is_object()) {
        const Json& u = j["usage"];
        r.prompt_tokens = u.value("prompt_tokens", std::int64_t{0});
        r.output_tokens = u.value("completion_tokens", std::int64_t{0});
        if (u.contains("prompt_tokens_details"))
          r.cached_tokens = u["prompt_tokens_details"].value("cached_tokens", std::int64_t{0});
      }
    }
    return true;
  };
  httplib::Response res;
  httplib::Error error;
  const bool ok = client.send(req, res, error);
  r.status = ok ? res.status : 0;
  if (!ok) r.error = httplib::to_string(error);
  if (ok && res.status != 200 && r.error.empty()) {
    const Json j = Json::parse(carry.empty() ? res.body : carry, nullptr, false);
    r.error = j.is_object() && j.contains("error") ? j["error"].value("message", "")
                                                   : "HTTP " + std::to_string(res.status);
  }
  return r;
}

}  // namespace

std::vector<ReplayOutcome> ReplayThroughGateway(const LlmTrace& trace, int block_tokens,
                                                const ReplayOptions& options) {
  std::vector<ReplayOutcome> outcomes(trace.requests.size());
  std::vector<std::thread> threads;
  threads.reserve(trace.requests.size());
  const auto start = Clock::now() + std::chrono::milliseconds(200);
  // Requests leave in the trace's order, as the simulator takes them: a thread woken late (a
  // loaded machine wakes some tens of ms late) holds back the ones due after it instead of being
  // overtaken, which would hand them another replica (round-robin's turn, least-request's count).
  std::mutex order_mu;
  std::condition_variable order_cv;
  std::size_t next_to_send = 0;
  for (std::size_t i = 0; i < trace.requests.size(); ++i) {
    const LlmRequest& req = trace.requests[i];
    // Built before its due time, so that building a long prompt does not delay it.
    std::string body = Json{{"model", options.model},
                            {"prompt", ReplayPromptTokens(req, i, block_tokens)},
                            {"max_tokens", req.output_tokens},
                            {"stream", true},
                            {"stream_options", {{"include_usage", true}}}}
                           .dump();
    const auto due =
        start + std::chrono::microseconds(static_cast<std::int64_t>(
                    static_cast<double>(req.arrival_us) / options.rate_scale * options.time_scale));
    std::this_thread::sleep_until(due - std::chrono::milliseconds(20));
    threads.emplace_back([&, i, due, body = std::move(body)] {
      std::this_thread::sleep_until(due);
      {
        std::unique_lock lock(order_mu);
        order_cv.wait(lock, [&] { return next_to_send == i; });
        ++next_to_send;
      }
      order_cv.notify_all();
      const double late = std::chrono::duration<double, std::milli>(Clock::now() - due).count();
      outcomes[i] = SendOne(body, options);
      outcomes[i].lateness_ms = late;
    });
  }
  for (auto& t : threads) t.join();
  return outcomes;
}

}  // namespace tessera::cli
