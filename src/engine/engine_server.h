// `tessera-engine-sim`'s server: the serve/ engine model run on the wall clock behind an
// OpenAI-compatible HTTP API (/v1/completions, /v1/chat/completions with and without
// `stream: true`, /v1/models, /health) with Prometheus metrics named as vLLM names them
// (/metrics). It computes nothing: each step sleeps the time the engine model gives it and then
// emits the step's tokens, so that routers and gateways can be exercised without a GPU. Every
// response names the engine simulated. Prompts are split into words, each word one token.
//
// Thread-safety: Start/Stop from one thread; requests are served on httplib's worker threads and
// the engine runs on its own stepping thread, all under one mutex.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/engine_profile.h"
#include "core/status.h"
#include "serve/engine_model.h"

namespace httplib {
class Server;
}

namespace tessera::engine {

struct EngineServerOptions {
  EngineProfile profile;
  std::string model = "simulated-llama3-8b";  // the name /v1/models lists
  int block_tokens = 16;
  std::int32_t max_waiting = 256;  // requests queued beyond this are refused with 429
  std::int32_t max_output_tokens = 4096;
};

class EngineServer {
 public:
  explicit EngineServer(EngineServerOptions options);
  ~EngineServer();

  // Binds host:port (port 0: any free port) and serves until Stop.
  Status Start(const std::string& host, int port);
  void Stop();
  int port() const { return port_; }

 private:
  struct RequestState {
    std::int64_t tokens = 0;
    bool done = false;
  };
  struct Admitted {
    std::int64_t id = 0;
    std::int64_t prompt_tokens = 0;
  };
  void StepLoop();
  void Routes();
  // Queues a request; its id, or an HTTP status and an OpenAI-style error body.
  std::int64_t Submit(const std::string& prompt, std::int64_t max_tokens, int* status,
                      std::string* error);
  std::string MetricsText();

  EngineServerOptions options_;
  std::unique_ptr<httplib::Server> http_;
  std::thread listener_, stepper_;
  int port_ = 0;

  std::mutex mu_;
  std::condition_variable work_;    // the stepper waits for requests
  std::condition_variable tokens_;  // handlers wait for their tokens
  serve::EngineReplica engine_;
  std::map<std::int64_t, RequestState> requests_;
  std::int64_t next_id_ = 1;
  std::int64_t prefix_queries_ = 0, prefix_hits_ = 0, finished_ = 0;
  bool stopping_ = false;
};

}  // namespace tessera::engine
