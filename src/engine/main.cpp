// tessera-engine-sim: a simulated inference engine (no GPU) with an OpenAI-compatible API,
// running the serving core's engine model on the wall clock. Under Tessera it runs as an
// InferenceService's command and listens on the port the agent sets (TESSERA_PORT; PORT as
// well, for tools that read it); elsewhere give --port. See docs/serving.md.
#include <httplib.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <thread>

#include "engine/engine_http.h"
#include "engine/engine_runner.h"
#include "engine/usage_file_writer.h"
#include "spec/engine_profile_yaml.h"
#include "spec/gpu_usage_file.h"

namespace {

httplib::Server* g_server = nullptr;

void OnSignal(int) {
  if (g_server != nullptr) g_server->stop();
}

int PortFromEnvironment() {
  for (const char* name : {"TESSERA_PORT", "PORT"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return std::atoi(v);
  }
  return 8000;  // vLLM's default
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tessera;
  CLI::App app{"tessera-engine-sim: a simulated inference engine (OpenAI-compatible API)"};
  std::string host = "127.0.0.1", profile_name = "llama3-8b-h100", model;
  int port = PortFromEnvironment();
  int threads = 64;
  engine::EngineOptions options;
  app.add_option("--host", host, "Address to listen on")->capture_default_str();
  app.add_option("--port", port,
                 "Port (default: $TESSERA_PORT, else $PORT, else 8000; 0: any free one)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--engine", profile_name, "Engine profile: a built-in name or a YAML file")
      ->capture_default_str();
  app.add_option("--model", model, "Model name served (default: the profile's model)");
  app.add_option("--block-tokens", options.block_tokens, "KV block size in tokens")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option("--kv-blocks", options.gpu_blocks,
                 "GPU KV cache blocks (default: the profile's kv_cache_tokens / block size)")
      ->check(CLI::Range(1, 1 << 30));
  app.add_option("--time-scale", options.time_scale,
                 "Wall time per modelled time (0.1 runs ten times faster)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-waiting", options.max_waiting,
                 "Queued requests beyond this are refused with 503")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  std::int64_t max_context = 0;
  app.add_option("--max-context", max_context,
                 "Context length in tokens (default: the profile's max_context_tokens)")
      ->check(CLI::Range(std::int64_t{2}, std::int64_t{1} << 24));
  app.add_option("--threads", threads, "HTTP worker threads (each stream holds one)")
      ->check(CLI::Range(2, 4096))
      ->capture_default_str();
  std::string port_file;
  app.add_option("--port-file", port_file, "Write the port listened on to this file (--port 0)");
  std::string kv_endpoint, kv_topic;
  int kv_port_offset = 0;
  app.add_option("--kv-events-endpoint", kv_endpoint,
                 "Publish KV events in vLLM's format (ZMQ PUB, msgpack) bound here, e.g. "
                 "tcp://127.0.0.1:5557");
  app.add_option("--kv-events-port-offset", kv_port_offset,
                 "Publish them on the listening address at the HTTP port + this (instead of "
                 "--kv-events-endpoint; tessera-gateway --kv-events-port-offset finds them)")
      ->check(CLI::Range(1, 65535));
  app.add_option("--kv-events-topic", kv_topic, "ZMQ topic of the KV event messages");
  CLI11_PARSE(app, argc, argv);
  if (!kv_endpoint.empty() && kv_port_offset > 0) {
    spdlog::error("--kv-events-endpoint and --kv-events-port-offset: give one");
    return 2;
  }

  auto profile = LoadEngineProfile(profile_name);
  if (!profile) {
    spdlog::error("--engine: {}", profile.error().message);
    return 2;
  }
  options.profile = *profile;
  if (max_context > 0) options.profile.max_context_tokens = max_context;
  if (model.empty()) model = profile->model;
  httplib::Server server;
  // cpp-httplib listens with a backlog of 5; a burst of clients would be reset. The listening
  // socket is captured here and given a deep backlog once bound (Linux lets listen() resize it).
  int listen_fd = -1;
  server.set_socket_options([&listen_fd](int fd) {
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    listen_fd = fd;
  });
  if (port == 0) {
    port = server.bind_to_any_port(host);
  } else if (!server.bind_to_port(host, port)) {
    port = -1;
  }
  if (port <= 0) {
    spdlog::error("cannot listen on {}", host);
    return 1;
  }
  if (kv_port_offset > 0) {
    kv_endpoint = "tcp://" + host + ":" + std::to_string(port + kv_port_offset);
  }
  std::unique_ptr<engine::ZmqKvPublisher> zmq;
  if (!kv_endpoint.empty()) {
    auto bound = engine::ZmqKvPublisher::Bind(kv_endpoint, kv_topic);
    if (!bound) {
      spdlog::error("{}", bound.error().message);
      return 1;
    }
    zmq = std::move(*bound);
    spdlog::info("KV events (vLLM's ZMQ format) published on {}", kv_endpoint);
  }
  engine::EngineRunner runner(options, std::move(zmq));
  // Under a Tessera agent: report the simulated GPU's use (docs/gpu-usage.md).
  std::unique_ptr<engine::UsageFileWriter> usage;
  if (const char* path = std::getenv(kGpuUsageFileEnv); path != nullptr && *path != '\0')
    usage = std::make_unique<engine::UsageFileWriter>(runner, path, 500);
  engine::EngineHttpInfo info{model, profile->name};
  server.new_task_queue = [threads] {
    return new httplib::ThreadPool(static_cast<std::size_t>(threads));
  };
  engine::RegisterEngineApi(server, runner, info);
  // cpp-httplib closes a keep-alive connection after 5 requests by default; clients (and the
  // gateway in front of an engine) keep theirs.
  server.set_keep_alive_max_count(1'000'000);
  server.set_keep_alive_timeout(60);
  if (listen_fd >= 0) ::listen(listen_fd, 4096);
  if (!port_file.empty()) std::ofstream(port_file) << port << "\n";
  g_server = &server;
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  spdlog::info(
      "tessera-engine-sim (simulated engine, no GPU): model {} profile {} ({} KV blocks of {} "
      "tokens) listening on http://{}:{}",
      model, profile->name, runner.options().gpu_blocks, options.block_tokens, host, port);
  server.listen_after_bind();
  spdlog::info("tessera-engine-sim (simulated): stopped");
  return 0;
}
