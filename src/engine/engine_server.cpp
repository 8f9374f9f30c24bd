#include "engine/engine_server.h"

#include <httplib.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "serve/block_hash.h"

namespace tessera::engine {

namespace {

using Json = nlohmann::json;
constexpr const char* kSimulated = "tessera-engine-sim (simulated)";

std::string ErrorBody(const std::string& message, const std::string& type,
                      const std::string& param) {
  return Json{{"error",
               {{"message", message},
                {"type", type},
                {"param", param.empty() ? Json(nullptr) : Json(param)},
                {"code", nullptr}}}}
      .dump();
}

// One token per word, each word's token a hash of its text: equal prompts give equal blocks.
std::vector<std::int32_t> Tokens(const std::string& text) {
  std::vector<std::int32_t> out;
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    std::uint32_t h = 2166136261u;
    for (unsigned char c : word) h = (h ^ c) * 16777619u;
    out.push_back(static_cast<std::int32_t>(h & 0x7fffffff));
  }
  return out;
}

// The prompt of a completions or chat request, or an error naming the field.
bool PromptOf(const Json& body, bool chat, std::string* prompt, std::string* field,
              std::string* why) {
  if (!chat) {
    *field = "prompt";
    if (!body.contains("prompt") || !body["prompt"].is_string()) {
      *why = "prompt: is required (a string)";
      return false;
    }
    *prompt = body["prompt"].get<std::string>();
    return true;
  }
  *field = "messages";
  if (!body.contains("messages") || !body["messages"].is_array() || body["messages"].empty()) {
    *why = "messages: is required (a non-empty list of {role, content})";
    return false;
  }
  for (std::size_t i = 0; i < body["messages"].size(); ++i) {
    const Json& m = body["messages"][i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
        !m["content"].is_string()) {
      *why = "messages[" + std::to_string(i) + "]: needs a string role and a string content";
      return false;
    }
    *prompt += m["role"].get<std::string>() + ": " + m["content"].get<std::string>() + "\n";
  }
  return true;
}

std::string TokenText(std::int64_t i) { return " tok" + std::to_string(i); }

}  // namespace

EngineServer::EngineServer(EngineServerOptions options)
    : options_(std::move(options)),
      http_(std::make_unique<httplib::Server>()),
      engine_(options_.profile, options_.block_tokens,
              std::max<std::int64_t>(1, options_.profile.kv_cache_tokens / options_.block_tokens),
              options_.profile.host_cache_tokens / options_.block_tokens) {
  Routes();
}

EngineServer::~EngineServer() { Stop(); }

Status EngineServer::Start(const std::string& host, int port) {
  port_ = port == 0 ? http_->bind_to_any_port(host) : (http_->bind_to_port(host, port) ? port : -1);
  if (port_ <= 0) return IoError("--port: cannot listen on " + host + ":" + std::to_string(port));
  stepper_ = std::thread([this] { StepLoop(); });
  listener_ = std::thread([this] { http_->listen_after_bind(); });
  return {};
}

void EngineServer::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  work_.notify_all();
  tokens_.notify_all();
  http_->stop();
  if (listener_.joinable()) listener_.join();
  if (stepper_.joinable()) stepper_.join();
}

void EngineServer::StepLoop() {
  std::unique_lock lock(mu_);
  while (true) {
    work_.wait(lock, [&] { return stopping_ || !engine_.idle(); });
    if (stopping_) return;
    const std::int64_t micros = engine_.BeginStep();
    if (micros == 0) continue;
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(micros);
    lock.unlock();
    std::this_thread::sleep_until(until);  // the step's simulated compute
    lock.lock();
    const serve::StepOutcome outcome = engine_.FinishStep();
    for (const serve::Admission& a : outcome.admitted) {
      prefix_hits_ += a.gpu_hit_tokens + a.host_hit_tokens;
    }
    for (const serve::TokenOutput& t : outcome.tokens) {
      auto it = requests_.find(t.id);
      if (it == requests_.end()) continue;
      ++it->second.tokens;
      it->second.done = t.last;
      finished_ += t.last ? 1 : 0;
    }
    engine_.TakeKvEvents();  // no subscriber yet: the KV event stream is not built
    tokens_.notify_all();
  }
}

std::int64_t EngineServer::Submit(const std::string& prompt, std::int64_t max_tokens, int* status,
                                  std::string* error) {
  const std::vector<std::int32_t> tokens = Tokens(prompt);
  const auto prompt_tokens = std::max<std::int64_t>(1, static_cast<std::int64_t>(tokens.size()));
  std::lock_guard lock(mu_);
  if (engine_.Load().waiting >= options_.max_waiting) {
    *status = 429;
    *error = ErrorBody("the simulated engine's queue is full (" +
                           std::to_string(options_.max_waiting) + " waiting); retry later",
                       "rate_limit_exceeded", "");
    return 0;
  }
  const std::int64_t id = next_id_++;
  serve::EngineRequest r{id, serve::ChainBlockHashes(tokens, options_.block_tokens), prompt_tokens,
                         max_tokens};
  if (!engine_.Enqueue(std::move(r))) {
    *status = 400;
    *error =
        ErrorBody("prompt: " + std::to_string(prompt_tokens) + " tokens + max_tokens " +
                      std::to_string(max_tokens) + " exceed the model's context (" +
                      std::to_string(options_.profile.max_context_tokens) + " tokens) or KV cache",
                  "invalid_request_error", "prompt");
    return 0;
  }
  prefix_queries_ += prompt_tokens;
  requests_[id] = RequestState{};
  work_.notify_one();
  return id;
}

std::string EngineServer::MetricsText() {
  std::lock_guard lock(mu_);
  const serve::ReplicaLoad l = engine_.Load();
  const std::string label = "{model_name=\"" + options_.model + "\"}";
  std::string out;
  const auto metric = [&](const char* name, const char* type, const char* help, double v) {
    out += std::string("# HELP ") + name + " " + help + " (simulated engine)\n# TYPE " + name +
           " " + type + "\n" + name + label + " " + std::to_string(v) + "\n";
  };
  metric("vllm:num_requests_running", "gauge", "Requests in the running batch", l.running);
  metric("vllm:num_requests_waiting", "gauge", "Requests waiting to be admitted", l.waiting);
  metric("vllm:gpu_cache_usage_perc", "gauge", "KV cache blocks in use, 0 to 1", l.kv_utilisation);
  metric("vllm:prefix_cache_queries_total", "counter",
         "Prompt tokens looked up in the prefix cache", static_cast<double>(prefix_queries_));
  metric("vllm:prefix_cache_hits_total", "counter", "Prompt tokens found in the prefix cache",
         static_cast<double>(prefix_hits_));
  metric("vllm:request_success_total", "counter", "Requests finished",
         static_cast<double>(finished_));
  return out;
}

void EngineServer::Routes() {
  http_->Get("/health", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{\"status\":\"ok\",\"engine\":\"tessera-engine-sim (simulated)\"}",
                    "application/json");
  });
  http_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(MetricsText(), "text/plain; version=0.0.4");
  });
  http_->Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    const Json body{{"object", "list"},
                    {"data",
                     {{{"id", options_.model},
                       {"object", "model"},
                       {"owned_by", kSimulated},
                       {"max_model_len", options_.profile.max_context_tokens}}}}};
    res.set_content(body.dump(), "application/json");
  });
  const auto completion = [this](bool chat) {
    return [this, chat](const httplib::Request& req, httplib::Response& res) {
      const Json body = Json::parse(req.body, nullptr, false);
      const auto fail = [&](int status, const std::string& message, const std::string& param) {
        res.status = status;
        res.set_content(ErrorBody(message, "invalid_request_error", param), "application/json");
      };
      if (body.is_discarded() || !body.is_object()) return fail(400, "body: not a JSON object", "");
      std::string prompt, field, why;
      if (!PromptOf(body, chat, &prompt, &field, &why)) return fail(400, why, field);
      std::int64_t max_tokens = 16;
      if (body.contains("max_tokens")) {
        const Json& m = body["max_tokens"];
        if (!m.is_number_integer() || m.get<std::int64_t>() < 1 ||
            m.get<std::int64_t>() > options_.max_output_tokens) {
          return fail(400,
                      "max_tokens: must be a whole number from 1 to " +
                          std::to_string(options_.max_output_tokens),
                      "max_tokens");
        }
        max_tokens = m.get<std::int64_t>();
      }
      const bool stream = body.value("stream", false);
      int status = 200;
      std::string error;
      const std::int64_t id = Submit(prompt, max_tokens, &status, &error);
      if (id == 0) {
        res.status = status;
        res.set_content(error, "application/json");
        return;
      }
      const std::string object = chat ? "chat.completion" : "text_completion";
      const std::string rid = (chat ? "chatcmpl-sim-" : "cmpl-sim-") + std::to_string(id);
      const auto choice = [chat, stream](const std::string& text, bool last) {
        Json c{{"index", 0}, {"finish_reason", last ? Json("length") : Json(nullptr)}};
        if (chat && stream) {
          c["delta"] = {{"content", text}};
        } else if (chat) {
          c["message"] = {{"role", "assistant"}, {"content", text}};
        } else {
          c["text"] = text;
        }
        return c;
      };
      if (!stream) {
        std::unique_lock lock(mu_);
        tokens_.wait(lock, [&] { return stopping_ || requests_[id].done; });
        const std::int64_t n = requests_[id].tokens;
        requests_.erase(id);
        lock.unlock();
        std::string text;
        for (std::int64_t i = 0; i < n; ++i) text += TokenText(i);
        const Json out{{"id", rid},
                       {"object", object},
                       {"model", options_.model},
                       {"system_fingerprint", kSimulated},
                       {"choices", {choice(text, true)}},
                       {"usage",
                        {{"prompt_tokens", std::max<std::size_t>(1, Tokens(prompt).size())},
                         {"completion_tokens", n},
                         {"total_tokens", std::max<std::size_t>(1, Tokens(prompt).size()) + n}}}};
        res.set_content(out.dump(), "application/json");
        return;
      }
      res.set_chunked_content_provider(
          "text/event-stream", [this, id, rid, object, choice, sent = std::int64_t{0}](
                                   std::size_t, httplib::DataSink& sink) mutable {
            std::unique_lock lock(mu_);
            tokens_.wait(lock, [&] {
              return stopping_ || requests_[id].tokens > sent || requests_[id].done;
            });
            const RequestState state = requests_[id];
            if (stopping_ && !state.done) {
              requests_.erase(id);
              return false;
            }
            lock.unlock();
            for (; sent < state.tokens; ++sent) {
              const bool last = state.done && sent + 1 == state.tokens;
              const Json chunk{{"id", rid},
                               {"object", object + ".chunk"},
                               {"model", options_.model},
                               {"system_fingerprint", kSimulated},
                               {"choices", {choice(TokenText(sent), last)}}};
              const std::string event = "data: " + chunk.dump() + "\n\n";
              if (!sink.write(event.data(), event.size())) {
                std::lock_guard again(mu_);  // the client left: forget it (it still decodes)
                requests_.erase(id);
                return false;
              }
            }
            if (state.done) {
              const std::string done = "data: [DONE]\n\n";
              sink.write(done.data(), done.size());
              sink.done();
              std::lock_guard again(mu_);
              requests_.erase(id);
            }
            return true;
          });
    };
  };
  http_->Post("/v1/completions", completion(false));
  http_->Post("/v1/chat/completions", completion(true));
}

}  // namespace tessera::engine
