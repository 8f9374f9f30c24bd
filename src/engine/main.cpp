// tessera-engine-sim: a simulated inference engine (docs/serving.md). It serves an
// OpenAI-compatible API on --host:--port (default $PORT, else 8000) and runs the engine model of
// --engine on the wall clock; it computes nothing and says so in every response.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdlib>
#include <iostream>

#include "engine/engine_server.h"
#include "spec/engine_profile_yaml.h"

namespace {
volatile std::sig_atomic_t g_stop = 0;
}

int main(int argc, char** argv) {
  CLI::App app{"tessera-engine-sim: a simulated LLM inference engine (OpenAI-compatible API)"};
  std::string host = "127.0.0.1";
  int port = std::getenv("PORT") != nullptr ? std::atoi(std::getenv("PORT")) : 8000;
  std::string engine = "llama3-8b-h100";
  tessera::engine::EngineServerOptions options;
  app.add_option("--host", host, "address to listen on")->capture_default_str();
  app.add_option("--port", port, "port (default: $PORT, else 8000; 0 = any free port)")
      ->capture_default_str();
  app.add_option("--engine", engine, "engine profile: built-in name or YAML file")
      ->capture_default_str();
  app.add_option("--model", options.model, "model name served")->capture_default_str();
  app.add_option("--block-tokens", options.block_tokens, "tokens per KV block")
      ->capture_default_str();
  app.add_option("--max-waiting", options.max_waiting, "queued requests before 429")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (options.block_tokens <= 0) {
    std::cerr << "tessera-engine-sim: --block-tokens: must be positive\n";
    return 2;
  }
  auto profile = tessera::LoadEngineProfile(engine);
  if (!profile) {
    std::cerr << "tessera-engine-sim: --engine: " << profile.error().message << "\n";
    return 2;
  }
  options.profile = *profile;
  tessera::engine::EngineServer server(options);
  if (auto ok = server.Start(host, port); !ok) {
    std::cerr << "tessera-engine-sim: " << ok.error().message << "\n";
    return 1;
  }
  std::cerr << "tessera-engine-sim (simulated " << options.profile.name << ", model "
            << options.model << ") listening on " << host << ":" << server.port() << "\n";
  std::signal(SIGINT, [](int) { g_stop = 1; });
  std::signal(SIGTERM, [](int) { g_stop = 1; });
  while (g_stop == 0) pause();
  server.Stop();
  return 0;
}
