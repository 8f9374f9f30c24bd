// tessera-gateway: the OpenAI-compatible data plane in front of InferenceServices. Either it
// watches a Tessera controller for the services and their ready replicas (--server URL or
// --state DIR), or it fronts a fixed list of OpenAI-compatible servers (--backend URL ...,
// e.g. vLLM or SGLang), as one service that takes any model. See docs/serving.md.
#include <httplib.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <fstream>
#include <memory>

#include "gateway/controller_watcher.h"
#include "gateway/proxy.h"
#include "gateway/replica_monitor.h"
#include "gateway/service_registry.h"
#include "serve/routing_policy.h"
#include "spec/engine_profile_yaml.h"

namespace {

httplib::Server* g_server = nullptr;

void OnSignal(int) {
  if (g_server != nullptr) g_server->stop();
}

std::string ControllerUrl(const std::string& server, const std::string& state) {
  if (!server.empty()) return server;
  if (state.empty()) return "";
  std::ifstream in(state + "/endpoint");
  std::string url;
  std::getline(in, url);
  return url;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tessera;
  using namespace tessera::gateway;
  CLI::App app{"tessera-gateway: OpenAI-compatible, KV-cache-aware gateway for InferenceServices"};
  std::string host = "127.0.0.1", server_url, state_dir, engine_name = "llama3-8b-h100";
  int port = 8080, threads = 128, health_ms = 1000;
  std::vector<std::string> backends;
  ServiceConfig static_service;
  static_service.name = "default";
  static_service.assume_ready = true;
  GatewayContext ctx;
  bool no_kv_events = false;
  app.add_option("--listen", host, "Address to listen on")->capture_default_str();
  app.add_option("--port", port, "Port")->check(CLI::Range(0, 65535))->capture_default_str();
  app.add_option("--server", server_url,
                 "Controller URL(s) to discover services from, comma-separated (several "
                 "controllers on etcd: the leader is followed)");
  app.add_option("--state", state_dir,
                 "Cluster state directory (its endpoint file names the "
                 "controller)");
  std::string token_file, ca_file;
  app.add_option("--ca-file", ca_file,
                 "CA of an https controller (default with --state: DIR/tls/ca.crt when it exists)");
  app.add_option("--token-file", token_file,
                 "The gateway's bearer token for the controller (default with --state: "
                 "DIR/auth/gateway.token when it exists)");
  app.add_option("--backend", backends,
                 "Static mode: base URL of an OpenAI-compatible server (repeat for several)");
  app.add_option("--policy", static_service.policy,
                 "Routing policy for --backend, and for services whose spec names none")
      ->capture_default_str();
  app.add_option("--block-tokens", static_service.block_tokens, "--backend: KV block size")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option("--slo-ttft-ms", static_service.slo_ttft_ms, "--backend: TTFT SLO (ms)");
  app.add_option("--slo-tbt-ms", static_service.slo_tbt_ms, "--backend: TBT SLO (ms)");
  app.add_option("--engine", engine_name,
                 "Engine profile the tessera policy predicts TTFT with (name or YAML file)")
      ->capture_default_str();
  app.add_option("--threads", threads, "HTTP worker threads (each open stream holds one)")
      ->check(CLI::Range(2, 8192))
      ->capture_default_str();
  app.add_option("--max-in-flight", ctx.options.max_in_flight,
                 "Requests held at once; more are shed with 503")
      ->check(CLI::Range(1, 1 << 24))
      ->capture_default_str();
  app.add_option("--max-attempts", ctx.options.max_attempts,
                 "Replicas tried per request before its first token")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  app.add_option("--cold-start-wait-ms", ctx.options.cold_start_wait_ms,
                 "How long a request for a service with no ready replica waits for one (scale "
                 "from zero); 0 refuses it at once with 503")
      ->check(CLI::Range(0, 600000))
      ->capture_default_str();
  app.add_option("--health-interval-ms", health_ms, "Replica health probe period")
      ->check(CLI::Range(50, 600000))
      ->capture_default_str();
  app.add_flag("--no-kv-events", no_kv_events, "Do not subscribe to replicas' KV events");
  std::vector<std::string> zmq_endpoints;
  KvEventSources zmq_sources;
  app.add_option("--kv-events-endpoint", zmq_endpoints,
                 "REPLICA_URL=tcp://HOST:PORT: the replica publishes vLLM's KV events (ZMQ) there "
                 "(repeat for several)");
  app.add_option("--kv-events-port-offset", zmq_sources.port_offset,
                 "Other replicas publish vLLM's KV events (ZMQ) on their host at their HTTP port "
                 "+ this (0: none do)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  app.add_option("--kv-events-topic", zmq_sources.topic,
                 "ZMQ topic prefix to subscribe to (vLLM's kv-events-config topic; default all)");
  std::string port_file;
  app.add_option("--port-file", port_file, "Write the port listened on to this file (--port 0)");
  CLI11_PARSE(app, argc, argv);

  auto engine = LoadEngineProfile(engine_name);
  if (!engine) {
    spdlog::error("--engine: {}", engine.error().message);
    return 2;
  }
  if (!serve::MakeRoutingPolicy(static_service.policy)) {
    spdlog::error("--policy: unknown policy \"{}\"", static_service.policy);
    return 2;
  }
  const std::string controller = ControllerUrl(server_url, state_dir);
  if (controller.empty() == backends.empty()) {
    spdlog::error("give either --backend URL ... (static mode) or --server/--state (discovery)");
    return 2;
  }
  ServiceRegistry registry(*engine);
  GatewayMetrics metrics;
  ctx.registry = &registry;
  ctx.metrics = &metrics;
  std::unique_ptr<ControllerWatcher> watcher;
  if (!backends.empty()) {
    static_service.backends = backends;
    registry.Reconcile({static_service});
  } else {
    if (token_file.empty() && !state_dir.empty() &&
        std::ifstream(state_dir + "/auth/gateway.token").good()) {
      token_file = state_dir + "/auth/gateway.token";
    }
    std::string token;
    if (!token_file.empty()) {
      std::ifstream in(token_file);
      if (!std::getline(in, token) || token.empty()) {
        spdlog::error("--token-file: no token in {}", token_file);
        return 2;
      }
    }
    if (ca_file.empty() && !state_dir.empty() && std::ifstream(state_dir + "/tls/ca.crt").good()) {
      ca_file = state_dir + "/tls/ca.crt";
    }
    auto urls = ControllerUrls::Parse(controller);
    if (!urls) {
      spdlog::error("{}", urls.error().message);
      return 2;
    }
    watcher = std::make_unique<ControllerWatcher>(
        std::move(*urls), registry, DiscoveryDefaults{static_service.policy}, 10, token, ca_file);
  }
  for (const std::string& e : zmq_endpoints) {
    if (auto s = AddKvEventEndpoint(e, &zmq_sources); !s) {
      spdlog::error("{}", s.error().message);
      return 2;
    }
  }
  ReplicaMonitor monitor(registry, health_ms, !no_kv_events, zmq_sources);

  httplib::Server server;
  server.new_task_queue = [threads] {
    return new httplib::ThreadPool(static_cast<std::size_t>(threads));
  };
  server.set_tcp_nodelay(true);
  RegisterGatewayApi(server, ctx);
  // cpp-httplib closes a keep-alive connection after 5 requests by default; clients (and the
  // gateway in front of an engine) keep theirs.
  server.set_keep_alive_max_count(1'000'000);
  server.set_keep_alive_timeout(60);
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
  if (listen_fd >= 0) ::listen(listen_fd, 4096);
  if (!port_file.empty()) std::ofstream(port_file) << port << "\n";
  g_server = &server;
  std::signal(SIGPIPE, SIG_IGN);  // a peer gone mid-write over TLS: an error, not the end
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  spdlog::info("tessera-gateway listening on http://{}:{} ({})", host, port,
               backends.empty() ? "services from " + controller
                                : std::to_string(backends.size()) + " static backend(s), policy " +
                                      static_service.policy);
  server.listen_after_bind();
  spdlog::info("tessera-gateway: stopped");
  // Detached upstream and KV-event threads may still hold connections: end without unwinding.
  std::fflush(nullptr);
  _exit(0);
}
