// tesserad: the Tessera controller. Serves the REST API (127.0.0.1 by default), keeps state in
// SQLite (WAL, synchronous=FULL) and runs the scheduling and liveness loops.
//
//   tesserad --state /var/lib/tessera --port 7480
//   tesserad --state DIR --port 0 --endpoint-file DIR/endpoint   (any free port, written down)
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "server/controller.h"
#include "server/http_api.h"
#include "server/scheduler_config.h"
#include "sim/queue_file.h"
#include "store/sqlite_store.h"

namespace {

bool WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return false;
    out << text;
    out.flush();
    if (!out) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tesserad: the Tessera controller"};
  std::string state_dir;
  std::string db_path;
  std::string listen = "127.0.0.1";
  int port = 7480;
  std::string endpoint_file;
  std::string config_path;
  double heartbeat_timeout_s = 10;
  double heartbeat_interval_s = 1;
  std::string queue_policy;
  std::string placement_policy;
  bool priority_preemption = false;
  std::string queues_path;
  int http_threads = 128;
  app.add_option("--state", state_dir, "State directory (the database is DIR/tesserad.db)");
  app.add_option("--db", db_path, "SQLite database file (overrides --state)");
  app.add_option("--listen", listen, "Address to listen on")->capture_default_str();
  app.add_option("--port", port, "Port; 0 picks a free one")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app.add_option("--endpoint-file", endpoint_file, "Write http://HOST:PORT here once listening");
  app.add_option("--config", config_path, "Scheduler config YAML (queuePolicy, placementPolicy)");
  app.add_option("--queue-policy", queue_policy,
                 "fifo | backfill | srtf | srsf | las | drf | drf-naive (overrides --config)");
  app.add_option("--placement-policy", placement_policy,
                 "e.g. bestfit, firstfit, fgd (overrides --config)");
  app.add_flag("--priority-preemption", priority_preemption,
               "A job that does not fit preempts running jobs of lower priority (fifo, backfill)");
  app.add_option("--queues", queues_path,
                 "Queue tree YAML (hierarchical quotas, docs/quotas.md) for --queue-policy drf "
                 "or drf-naive; jobs name its leaf queues");
  app.add_option("--heartbeat-timeout", heartbeat_timeout_s,
                 "Seconds of silence before a node is lost")
      ->capture_default_str()
      ->check(CLI::Range(0.2, 3600.0));
  app.add_option("--heartbeat-interval", heartbeat_interval_s, "Seconds between agent heartbeats")
      ->capture_default_str()
      ->check(CLI::Range(0.05, 600.0));
  app.add_option("--http-threads", http_threads,
                 "HTTP worker threads: one per open connection (agents long-poll); at least agents "
                 "+ clients")
      ->capture_default_str()
      ->check(CLI::Range(4, 1024));
  CLI11_PARSE(app, argc, argv);

  if (db_path.empty()) {
    if (state_dir.empty()) {
      std::fprintf(stderr, "tesserad: give --state DIR or --db FILE\n");
      return 2;
    }
    std::error_code ec;
    std::filesystem::create_directories(state_dir, ec);
    if (ec) {
      std::fprintf(stderr, "tesserad: cannot create %s: %s\n", state_dir.c_str(),
                   ec.message().c_str());
      return 1;
    }
    db_path = state_dir + "/tesserad.db";
  }
  if (listen != "127.0.0.1" && listen != "localhost" && listen != "::1") {
    std::fprintf(stderr, "tesserad: warning: listening on %s; the API has no authentication yet\n",
                 listen.c_str());
  }

  tessera::ControllerOptions options;
  if (!config_path.empty()) {
    auto config = tessera::LoadSchedulerConfig(config_path);
    if (!config) {
      std::fprintf(stderr, "tesserad: %s\n", config.error().message.c_str());
      return 2;
    }
    options.scheduler = *config;
  }
  if (!queue_policy.empty()) options.scheduler.queue_policy = queue_policy;
  if (!placement_policy.empty()) options.scheduler.placement_policy = placement_policy;
  if (priority_preemption) options.scheduler.priority_preemption = true;
  if (!queues_path.empty()) {
    auto tree = tessera::ReadQueueFile(queues_path);
    if (!tree) {
      std::fprintf(stderr, "tesserad: %s\n", tree.error().message.c_str());
      return 2;
    }
    options.queues = std::move(*tree);
    options.queues_source = queues_path;
  }
  if (auto s = tessera::CheckControllerOptions(options); !s) {
    std::fprintf(stderr, "tesserad: %s\n", s.error().message.c_str());
    return 2;
  }
  options.heartbeat_timeout_ms = static_cast<tessera::Tick>(heartbeat_timeout_s * 1000);
  options.heartbeat_interval_ms = static_cast<tessera::Tick>(heartbeat_interval_s * 1000);

  // Signals are taken by one thread; every other thread inherits the blocked mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  auto store = tessera::SqliteStore::Open(db_path);
  if (!store) {
    std::fprintf(stderr, "tesserad: %s\n", store.error().message.c_str());
    return 1;
  }
  auto controller = tessera::Controller::Create(store->get(), options);
  if (!controller) {
    std::fprintf(stderr, "tesserad: %s\n", controller.error().message.c_str());
    return 1;
  }
  tessera::ApiServer server(**controller, http_threads);
  auto bound = server.Bind(listen, port);
  if (!bound) {
    std::fprintf(stderr, "tesserad: %s\n", bound.error().message.c_str());
    return 1;
  }
  (*controller)->Start();
  const std::string host = listen == "0.0.0.0" ? "127.0.0.1" : listen;
  const std::string endpoint = "http://" + host + ":" + std::to_string(*bound);
  const auto status = (*controller)->ServerStatus();
  std::fprintf(stderr,
               "tesserad: serving %s (store %s, %zu jobs loaded in %lld ms, queue policy %s, "
               "placement %s)\n",
               endpoint.c_str(), db_path.c_str(), status["loadedJobs"].get<std::size_t>(),
               static_cast<long long>(status["loadMs"].get<std::int64_t>()),
               options.scheduler.queue_policy.c_str(), options.scheduler.placement_policy.c_str());
  if (!endpoint_file.empty() && !WriteFileAtomically(endpoint_file, endpoint + "\n")) {
    std::fprintf(stderr, "tesserad: cannot write %s\n", endpoint_file.c_str());
    return 1;
  }
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    std::fprintf(stderr, "tesserad: signal %d, shutting down\n", sig);
    server.Stop();
  });
  server.Serve();
  (*controller)->Stop();
  // Wake the signal thread if the server stopped on its own.
  ::kill(::getpid(), SIGTERM);
  signal_thread.join();
  std::fprintf(stderr, "tesserad: stopped\n");
  return 0;
}
