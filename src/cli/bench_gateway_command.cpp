// `tessera bench gateway --out FILE`: the serving data plane's speed (docs/benchmarks.md).
//   route_us_p50: one routing decision (ServiceRoutes::Route, the gateway's call, with its lock)
//     with 256 replicas and a 1,000,000-block index, prompts of 128 blocks;
//   proxy_rps / nginx_rps: tessera-gateway and Debian's nginx side by side proxying the same two
//     trivial backends, non-streaming, plain HTTP on loopback, same closed-loop load;
//   stream_token_overhead_ms_p99: p99 of a streamed chunk's delay (backend send -> client
//     receipt) through the gateway, minus the median delay of the same stream sent direct.
// The benchmark starts and stops tessera-gateway and nginx itself; everything is bounded.
#include <fmt/core.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/bench_gateway_load.h"
#include "cli/bench_group.h"
#include "cli/commands.h"
#include "cli/daemon.h"
#include "cli/live_commands.h"
#include "core/percentile.h"
#include "gateway/service_routes.h"
#include "sim/schedule_benchmark.h"

namespace tessera::cli {

namespace {

using Json = nlohmann::json;

struct BenchGatewayFlags {
  std::string out;
  std::string bin_dir;
  std::string nginx = "/usr/sbin/nginx";
  int replicas = 256;
  std::int64_t index_blocks = 1'000'000;
  int decisions = 20000;
  int connections = 16;
  std::int64_t requests = 40000;
  double seconds = 10;
  int stream_tokens = 200;
  int stream_interval_us = 2000;
  int streams = 8;
};

// Routing decisions against a full index: prompts of 128 blocks whose first half is a prefix
// some replica already holds (a multi-turn conversation) and whose second half is new.
Json BenchRoute(const BenchGatewayFlags& f, const std::string& policy) {
  gateway::ServiceConfig c;
  c.name = "bench";
  c.policy = policy;
  c.assume_ready = true;
  c.slo_ttft_ms = 2000;
  for (int r = 0; r < f.replicas; ++r) c.backends.push_back("http://r" + std::to_string(r));
  auto routes = gateway::ServiceRoutes::Make(c, EngineProfile{});
  if (!routes) return {{"error", routes.error().message}};
  constexpr int kPromptBlocks = 128;
  std::vector<serve::KvEvent> events;
  serve::BlockHash next = 1;
  for (std::int64_t filled = 0; filled < f.index_blocks; filled += kPromptBlocks) {
    events.clear();
    for (int b = 0; b < kPromptBlocks; ++b)
      events.push_back({serve::KvEvent::Kind::kStored, next++});
    (*routes)->ApplyKvEvents(
        c.backends[static_cast<std::size_t>(filled / kPromptBlocks) % c.backends.size()], events);
  }
  std::vector<double> micros;
  micros.reserve(static_cast<std::size_t>(f.decisions));
  std::vector<serve::BlockHash> prompt(kPromptBlocks);
  for (int i = 0; i < f.decisions; ++i) {
    const serve::BlockHash base =
        1 +
        static_cast<serve::BlockHash>(i * 7919 % (f.index_blocks / kPromptBlocks)) * kPromptBlocks;
    for (int b = 0; b < kPromptBlocks; ++b) {
      prompt[static_cast<std::size_t>(b)] =
          b < kPromptBlocks / 2
              ? base + static_cast<serve::BlockHash>(b)
              : (1ull << 62) + static_cast<serve::BlockHash>(i) * kPromptBlocks + b;
    }
    const auto t0 = std::chrono::steady_clock::now();
    auto pick = (*routes)->Route(prompt, kPromptBlocks * 16, 64, {});
    const auto t1 = std::chrono::steady_clock::now();
    micros.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    (*routes)->Finished(pick, false);
  }
  return {
      {"policy", policy}, {"p50_us", Percentile(micros, 50)}, {"p99_us", Percentile(micros, 99)}};
}

std::string NginxConfig(const std::string& dir, int port, const std::vector<int>& backends) {
  std::string upstream;
  for (int b : backends) upstream += fmt::format("    server 127.0.0.1:{};\n", b);
  return fmt::format(
      "worker_processes {};\npid {}/nginx.pid;\nerror_log {}/error.log warn;\n"
      "events {{ worker_connections 4096; }}\n"
      "http {{\n  access_log off;\n  upstream backends {{\n{}    keepalive 64;\n  }}\n"
      "  server {{\n    listen 127.0.0.1:{};\n    location / {{\n"
      "      proxy_pass http://backends;\n      proxy_http_version 1.1;\n"
      "      proxy_set_header Connection \"\";\n    }}\n  }}\n}}\n",
      std::max(1u, std::thread::hardware_concurrency()), dir, dir, upstream, port);
}

bool WaitForPort(int port, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int>(seconds * 1000));
  while (std::chrono::steady_clock::now() < deadline) {
    if (CanConnect(port)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

void Stop(pid_t pid) {
  if (pid <= 0) return;
  ::kill(pid, SIGTERM);
  for (int i = 0; i < 100 && ::waitpid(pid, nullptr, WNOHANG) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

pid_t StartChild(const std::vector<std::string>& argv, const std::string& log) {
  auto pid = SpawnDetached(argv, log);
  return pid ? *pid : -1;
}

int RunBenchGateway(const BenchGatewayFlags& f) {
  const std::string bin = f.bin_dir.empty() ? SelfDirectory() : f.bin_dir;
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("tessera-bench-gateway-" + std::to_string(::getpid())))
                              .string();
  std::filesystem::create_directories(dir);
  Json out;
  out["machine"] = MachineDescription();
  std::cerr << "routing: " << f.replicas << " replicas, " << f.index_blocks << " blocks\n";
  Json by_policy = Json::object();
  for (const char* p : {"tessera", "prefix", "weighted", "least-request", "round-robin"}) {
    by_policy[p] = BenchRoute(f, p);
    std::cerr << fmt::format("  {}: p50 {:.2f} us\n", p, by_policy[p].value("p50_us", 0.0));
  }
  out["route_us_p50"] = by_policy["tessera"].value("p50_us", 0.0);
  out["route"] = {{"replicas", f.replicas},
                  {"index_blocks", f.index_blocks},
                  {"prompt_blocks", 128},
                  {"decisions", f.decisions},
                  {"by_policy", by_policy}};

  TrivialBackend b1(f.stream_tokens, f.stream_interval_us),
      b2(f.stream_tokens, f.stream_interval_us);
  const std::vector<int> backends = {b1.port(), b2.port()};
  const int gw_port = FreeLoopbackPort(), nginx_port = FreeLoopbackPort();
  const pid_t gw = StartChild(
      {bin + "/tessera-gateway", "--port", std::to_string(gw_port), "--policy", "round-robin",
       "--backend", fmt::format("http://127.0.0.1:{}", b1.port()), "--backend",
       fmt::format("http://127.0.0.1:{}", b2.port()), "--no-kv-events", "--threads",
       std::to_string(f.connections + f.streams + 8), "--health-interval-ms", "1000"},
      dir + "/gateway.log");
  const std::string conf = NginxConfig(dir, nginx_port, backends);
  std::ofstream(dir + "/nginx.conf") << conf;
  const pid_t nginx = StartChild(
      {f.nginx, "-p", dir, "-c", dir + "/nginx.conf", "-g", "daemon off;"}, dir + "/nginx.log");
  const bool up = WaitForPort(gw_port, 10) && WaitForPort(nginx_port, 10);
  const std::string body = R"({"model":"m","prompt":"hello world","max_tokens":1})";
  if (up) {
    RunClosedLoop(gw_port, "/v1/completions", body, f.connections, 2000, 2);  // warm-up
    RunClosedLoop(nginx_port, "/v1/completions", body, f.connections, 2000, 2);
    const LoadResult g =
        RunClosedLoop(gw_port, "/v1/completions", body, f.connections, f.requests, f.seconds);
    const LoadResult n =
        RunClosedLoop(nginx_port, "/v1/completions", body, f.connections, f.requests, f.seconds);
    out["proxy_rps"] = g.rps();
    out["nginx_rps"] = n.rps();
    out["proxy_vs_nginx"] = n.rps() > 0 ? g.rps() / n.rps() : 0;
    out["proxy"] = {{"connections", f.connections}, {"gateway_ok", g.ok},
                    {"gateway_failed", g.failed},   {"nginx_ok", n.ok},
                    {"nginx_failed", n.failed},     {"body", body}};
    const std::string stream_body =
        R"({"model":"m","prompt":"hello world","max_tokens":200,"stream":true})";
    const auto direct = StreamChunkDelaysMs(b1.port(), stream_body, f.streams);
    const auto via = StreamChunkDelaysMs(gw_port, stream_body, f.streams);
    out["stream_token_overhead_ms_p99"] = Percentile(via, 99) - Percentile(direct, 50);
    out["stream"] = {
        {"streams", f.streams},
        {"tokens_per_stream", f.stream_tokens},
        {"interval_us", f.stream_interval_us},
        {"chunks_direct", direct.size()},
        {"chunks_via_gateway", via.size()},
        {"delay_ms_direct", {{"p50", Percentile(direct, 50)}, {"p99", Percentile(direct, 99)}}},
        {"delay_ms_via_gateway", {{"p50", Percentile(via, 50)}, {"p99", Percentile(via, 99)}}}};
  } else {
    out["error"] = "tessera-gateway or nginx did not start; logs in " + dir;
  }
  Stop(gw);
  Stop(nginx);
  out["nginx_config"] = conf;
  out["targets"] = {{"route_us_p50", "<= 20"},
                    {"proxy_rps", ">= 2/3 of nginx_rps"},
                    {"stream_token_overhead_ms_p99", "<= 1"}};
  std::cout << "nginx configuration:\n" << conf << "\n" << out.dump(2) << "\n";
  if (!f.out.empty()) std::ofstream(f.out) << out.dump(2) << "\n";
  if (up) std::filesystem::remove_all(dir);
  return up ? 0 : 1;
}

}  // namespace

void RegisterBenchGatewayCommand(CLI::App& app) {
  CLI::App* bench = &BenchGroup(app);
  auto flags = std::make_shared<BenchGatewayFlags>();
  auto* cmd = bench->add_subcommand(
      "gateway",
      "Measure the gateway: routing decision time, proxy requests/s against nginx, "
      "streamed-token overhead");
  cmd->add_option("--out", flags->out, "Write the JSON result here");
  cmd->add_option("--bin-dir", flags->bin_dir, "Where tessera-gateway is");
  cmd->add_option("--nginx", flags->nginx, "The nginx binary")->capture_default_str();
  cmd->add_option("--replicas", flags->replicas, "Replicas for the routing measure")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--index-blocks", flags->index_blocks, "Blocks in the index")
      ->check(CLI::Range(std::int64_t{128}, std::int64_t{100'000'000}))
      ->capture_default_str();
  cmd->add_option("--connections", flags->connections, "Load generator connections")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--requests", flags->requests, "Requests per proxy measured (at most)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{10'000'000}))
      ->capture_default_str();
  cmd->add_option("--seconds", flags->seconds, "Seconds per proxy measured (at most)")
      ->check(CLI::Range(0.5, 600.0))
      ->capture_default_str();
  cmd->callback([flags] { SetExitCode(RunBenchGateway(*flags)); });
}

}  // namespace tessera::cli
