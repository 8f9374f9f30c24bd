// tesserad: the Tessera controller. Serves the REST API (127.0.0.1 by default), keeps state in
// SQLite (WAL, synchronous=FULL) and runs the scheduling and liveness loops. Logs go to stderr
// through spdlog: "2026-12-01T09:10:37.123 info tesserad: ...".
//
//   tesserad --state /var/lib/tessera --port 7480
//   tesserad --state DIR --port 0 --endpoint-file DIR/endpoint   (any free port, written down)
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include "server/controller.h"
#include "server/http_api.h"
#include "server/http_auth.h"
#include "server/scheduler_config.h"
#include "spec/queue_file.h"
#include "store/sqlite_store.h"

namespace {

using tessera::Result;

struct Flags {
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
  std::string topology_levels;
  std::string recovery = "requeue";
  int spares_per_domain = -1;  // -1: 1 with --recovery spares, else 0
  int http_threads = 128;
  std::string token_auth_file;
  std::string bootstrap_token_file;
  std::string node_credentials_file;
  bool insecure = false;
  std::string tls_cert_file;
  std::string tls_key_file;
};

void AddFlags(CLI::App& app, Flags& f) {
  app.add_option("--state", f.state_dir, "State directory (the database is DIR/tesserad.db)");
  app.add_option("--db", f.db_path, "SQLite database file (overrides --state)");
  app.add_option("--listen", f.listen, "Address to listen on")->capture_default_str();
  app.add_option("--port", f.port, "Port; 0 picks a free one")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app.add_option("--endpoint-file", f.endpoint_file, "Write http://HOST:PORT here once listening");
  app.add_option("--config", f.config_path, "Scheduler config YAML (queuePolicy, placementPolicy)");
  app.add_option("--queue-policy", f.queue_policy,
                 "fifo | backfill | srtf | srsf | las | drf | drf-naive (overrides --config)");
  app.add_option("--placement-policy", f.placement_policy,
                 "e.g. bestfit, firstfit, fgd (overrides --config)");
  app.add_flag("--priority-preemption", f.priority_preemption,
               "A job that does not fit preempts running jobs of lower priority (fifo, backfill)");
  app.add_option("--queues", f.queues_path,
                 "Queue tree YAML (hierarchical quotas, docs/quotas.md) for --queue-policy drf "
                 "or drf-naive; jobs name its leaf queues");
  app.add_option("--topology-levels", f.topology_levels,
                 "Topology levels, outermost first, e.g. spine,leaf: every agent registers its "
                 "domain at each (tessera-agent --topology spine=s1,leaf=l3)");
  app.add_option("--recovery", f.recovery,
                 "How gangs recover from a lost or drained node unless their spec.recovery says: "
                 "requeue | replace | spares (docs/failures.md)")
      ->capture_default_str();
  app.add_option("--spares-per-domain", f.spares_per_domain,
                 "Idle spare nodes kept in every leaf domain for recovery (default 1 with "
                 "--recovery spares, else 0)");
  app.add_option("--heartbeat-timeout", f.heartbeat_timeout_s,
                 "Seconds of silence before a node is lost")
      ->capture_default_str()
      ->check(CLI::Range(0.2, 3600.0));
  app.add_option("--heartbeat-interval", f.heartbeat_interval_s, "Seconds between agent heartbeats")
      ->capture_default_str()
      ->check(CLI::Range(0.05, 600.0));
  app.add_option("--http-threads", f.http_threads,
                 "HTTP worker threads: one per open connection (agents long-poll); at least agents "
                 "+ clients")
      ->capture_default_str()
      ->check(CLI::Range(4, 1024));
  app.add_option("--token-auth-file", f.token_auth_file,
                 "Users' bearer tokens, kube-apiserver's CSV shape: token,user,uid,\"g1,g2\" "
                 "(groups: tessera:admins, tessera:viewers, team:QUEUE, tessera:gateway, "
                 "tessera:metrics; docs/security.md)");
  app.add_option("--bootstrap-token-file", f.bootstrap_token_file,
                 "Tokens (one a line) a new node registers with; each node is then issued a "
                 "credential of its own");
  app.add_option("--node-credentials", f.node_credentials_file,
                 "Where the nodes' credential digests are kept (default: beside the database)");
  app.add_option("--tls-cert-file", f.tls_cert_file,
                 "Serve HTTPS with this certificate (PEM; `tessera up` makes one from a local CA)");
  app.add_option("--tls-private-key-file", f.tls_key_file, "The certificate's private key (PEM)");
  app.add_flag("--insecure", f.insecure,
               "No authentication (a throwaway cluster on 127.0.0.1 only)");
}

// The database file: --db, or DIR/tesserad.db with DIR created.
Result<std::string> DatabasePath(const Flags& f) {
  if (!f.db_path.empty()) return f.db_path;
  if (f.state_dir.empty()) return tessera::InvalidArgument("give --state DIR or --db FILE");
  std::error_code ec;
  std::filesystem::create_directories(f.state_dir, ec);
  if (ec) return tessera::IoError("cannot create " + f.state_dir + ": " + ec.message());
  return f.state_dir + "/tesserad.db";
}

// The controller's options from the flags (and --config, --queues), checked.
Result<tessera::ControllerOptions> OptionsFrom(const Flags& f) {
  tessera::ControllerOptions options;
  if (!f.config_path.empty()) {
    auto config = tessera::LoadSchedulerConfig(f.config_path);
    if (!config) return std::unexpected(config.error());
    options.scheduler = *config;
  }
  if (!f.queue_policy.empty()) options.scheduler.queue_policy = f.queue_policy;
  if (!f.placement_policy.empty()) options.scheduler.placement_policy = f.placement_policy;
  if (f.priority_preemption) options.scheduler.priority_preemption = true;
  if (!f.queues_path.empty()) {
    auto tree = tessera::ReadQueueFile(f.queues_path);
    if (!tree) return std::unexpected(tree.error());
    options.queues = std::move(*tree);
    options.queues_source = f.queues_path;
  }
  for (std::size_t start = 0; start < f.topology_levels.size();) {
    const std::size_t comma =
        std::min(f.topology_levels.find(',', start), f.topology_levels.size());
    const std::string level = f.topology_levels.substr(start, comma - start);
    if (level.empty() || level == "node" || level == "gpu") {
      return tessera::InvalidArgument("--topology-levels: '" + level +
                                      "' is not a level name (node and gpu are implicit)");
    }
    options.topology_levels.push_back(level);
    start = comma + 1;
  }
  auto recovery = tessera::ParseRecoveryMode(f.recovery);
  if (!recovery) {
    return tessera::InvalidArgument("--recovery: must be one of " +
                                    std::string(tessera::kRecoveryModeNames) + ", got '" +
                                    f.recovery + "'");
  }
  options.recovery = *recovery;
  options.spares_per_domain = f.spares_per_domain >= 0
                                  ? f.spares_per_domain
                                  : (*recovery == tessera::RecoveryMode::kSpares);
  if (auto s = tessera::CheckControllerOptions(options); !s) return std::unexpected(s.error());
  options.heartbeat_timeout_ms = static_cast<tessera::Tick>(f.heartbeat_timeout_s * 1000);
  options.heartbeat_interval_ms = static_cast<tessera::Tick>(f.heartbeat_interval_s * 1000);
  return options;
}

// The authentication of every request, from --token-auth-file and --bootstrap-token-file;
// null with --insecure.
Result<std::shared_ptr<const tessera::RequestGuard>> GuardFrom(const Flags& f,
                                                               const std::string& db_path) {
  if (f.insecure) return nullptr;
  if (f.token_auth_file.empty()) {
    spdlog::warn("no --token-auth-file: the API is open to every local process (--insecure)");
    return nullptr;
  }
  auto users = tessera::TokenTable::Load(f.token_auth_file);
  if (!users) return std::unexpected(users.error());
  std::vector<std::string> bootstrap;
  if (!f.bootstrap_token_file.empty()) {
    auto tokens = tessera::ReadTokenLines(f.bootstrap_token_file);
    if (!tokens) return std::unexpected(tokens.error());
    bootstrap = std::move(*tokens);
  }
  const std::string creds_path =
      !f.node_credentials_file.empty()
          ? f.node_credentials_file
          : (std::filesystem::path(db_path).parent_path() / "node-credentials").string();
  auto nodes = tessera::NodeCredentials::Open(creds_path, bootstrap);
  if (!nodes) return std::unexpected(nodes.error());
  spdlog::info("authentication on: {} user token(s), {} bootstrap token(s), node credentials in {}",
               users->size(), bootstrap.size(), creds_path);
  return std::make_shared<const tessera::RequestGuard>(std::move(*users), std::move(*nodes));
}

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

// Opens the store, starts the controller and serves until SIGTERM, SIGINT or SIGHUP.
int Serve(const Flags& f, const std::string& db_path, const tessera::ControllerOptions& options,
          std::shared_ptr<const tessera::RequestGuard> guard) {
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
    spdlog::error("{}", store.error().message);
    return 1;
  }
  auto controller = tessera::Controller::Create(store->get(), options);
  if (!controller) {
    spdlog::error("{}", controller.error().message);
    return 1;
  }
  const tessera::ApiServer::TlsFiles tls{f.tls_cert_file, f.tls_key_file};
  tessera::ApiServer server(**controller, f.http_threads, tls.cert_file.empty() ? nullptr : &tls);
  if (!server.valid()) {
    spdlog::error("cannot load the TLS certificate {} and key {}", tls.cert_file, tls.key_file);
    return 1;
  }
  if (guard) server.RequireAuth(std::move(guard));
  auto bound = server.Bind(f.listen, f.port);
  if (!bound) {
    spdlog::error("{}", bound.error().message);
    return 1;
  }
  (*controller)->Start();
  const std::string host = f.listen == "0.0.0.0" ? "127.0.0.1" : f.listen;
  const std::string scheme = f.tls_cert_file.empty() ? "http://" : "https://";
  const std::string endpoint = scheme + host + ":" + std::to_string(*bound);
  const auto status = (*controller)->ServerStatus();
  spdlog::info("serving {} (store {}, {} jobs loaded in {} ms, queue policy {}, placement {})",
               endpoint, db_path, status["loadedJobs"].get<std::size_t>(),
               status["loadMs"].get<std::int64_t>(), options.scheduler.queue_policy,
               options.scheduler.placement_policy);
  if (!f.endpoint_file.empty() && !WriteFileAtomically(f.endpoint_file, endpoint + "\n")) {
    spdlog::error("cannot write {}", f.endpoint_file);
    return 1;
  }
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    spdlog::info("signal {}, shutting down", sig);
    server.Stop();
  });
  server.Serve();
  (*controller)->Stop();
  // Wake the signal thread if the server stopped on its own.
  ::kill(::getpid(), SIGTERM);
  signal_thread.join();
  spdlog::info("stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tesserad: the Tessera controller"};
  Flags flags;
  AddFlags(app, flags);
  CLI11_PARSE(app, argc, argv);
  spdlog::set_default_logger(spdlog::stderr_color_mt("tesserad"));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %n: %v");

  ::umask(077);  // the database, its journal, the credentials and the endpoint: 0600
  auto db_path = DatabasePath(flags);
  if (!db_path) {
    spdlog::error("{}", db_path.error().message);
    return db_path.error().code == tessera::Error::Code::kInvalidArgument ? 2 : 1;
  }
  const bool loopback =
      flags.listen == "127.0.0.1" || flags.listen == "localhost" || flags.listen == "::1";
  if (flags.insecure && !loopback) {
    spdlog::error("--insecure listens on 127.0.0.1 only, not {}", flags.listen);
    return 2;
  }
  if (flags.tls_cert_file.empty() != flags.tls_key_file.empty()) {
    spdlog::error("give --tls-cert-file and --tls-private-key-file together");
    return 2;
  }
  if (flags.tls_cert_file.empty() && !loopback) {
    // Bearer tokens in clear text off this machine: only with TLS.
    spdlog::error(
        "plain HTTP is served on 127.0.0.1 only; give --tls-cert-file and "
        "--tls-private-key-file to listen on {}",
        flags.listen);
    return 2;
  }
  auto options = OptionsFrom(flags);
  if (!options) {
    spdlog::error("{}", options.error().message);
    return 2;
  }
  auto guard = GuardFrom(flags, *db_path);
  if (!guard) {
    spdlog::error("{}", guard.error().message);
    return 2;
  }
  for (const char* suffix : {"", "-wal", "-shm"}) {
    ::chmod((*db_path + suffix).c_str(), 0600);  // a database made before this version
  }
  return Serve(flags, *db_path, *options, std::move(*guard));
}
