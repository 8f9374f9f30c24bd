// tesserad: the Tessera controller. Serves the REST API (127.0.0.1 by default), keeps state in
// SQLite (WAL, synchronous=FULL) and runs the scheduling and liveness loops. Logs go to stderr
// through spdlog: "2026-12-01T09:10:37.123 info tesserad: ...".
//
//   tesserad --state /var/lib/tessera --port 7480
//   tesserad --state DIR --port 0 --endpoint-file DIR/endpoint   (any free port, written down)
//   tesserad --store etcd --etcd-endpoints URL,URL,URL --port 7480   (several: one leads)
//   ... --etcd-endpoints https://... --etcd-ca-file CA --etcd-cert-file CRT --etcd-key-file KEY
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "server/controller.h"
#include "server/etcd_serving.h"
#include "server/http_api.h"
#include "server/http_auth.h"
#include "server/process_signals.h"
#include "server/scheduler_config.h"
#include "spec/colocation_file.h"
#include "spec/queue_file.h"
#include "store/etcd_client.h"
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
  std::optional<std::uint64_t> seed;  // the run seed; none: --config's, else 0
  std::string queues_path;
  std::string colocation_path;
  double usage_window_s = 600;
  std::string topology_levels;
  std::string recovery;        // empty: --config's recovery, else requeue
  int spares_per_domain = -1;  // -1: 1 with --recovery spares, else 0
  int http_threads = 16;
  tessera::FrontendLimits limits;
  double header_timeout_s = 10;
  double body_timeout_s = 30;
  double idle_timeout_s = 5;
  std::string gateway;
  int autoscale_interval_ms = 1000;
  int drain_min_ms = 1000;
  std::string store = "sqlite";
  std::string etcd_endpoints;
  std::string etcd_prefix = "/tessera/";
  tessera::EtcdTls etcd_tls;
  int lease_ttl_s = 2;
  std::string token_auth_file;
  std::string bootstrap_token_file;
  std::string node_credentials_file;
  bool insecure = false;
  std::string tls_cert_file;
  std::string tls_key_file;
  tessera::AgentClientTls agent_tls;
  tessera::ExecSessionLimits exec;
};

// A flag whose value must lie in [lo, hi], with its default shown in --help.
template <typename T, typename Bound>
void AddRanged(CLI::App& app, const std::string& name, T& value, const std::string& help, Bound lo,
               Bound hi) {
  app.add_option(name, value, help)->capture_default_str()->check(CLI::Range(lo, hi));
}

// The HTTP front end's limits (src/server/http_frontend.h).
void AddLimitFlags(CLI::App& app, Flags& f) {
  AddRanged(app, "--agent-threads", f.limits.agent_threads,
            "Worker threads for agents' registrations, heartbeats (long polls) and reports, "
            "apart from users': at least the agents polling at once",
            1, 4096);
  AddRanged(app, "--long-poll-threads", f.limits.long_poll_threads,
            "Worker threads for /v1/events long polls, apart from everything else", 1, 4096);
  AddRanged(app, "--max-queued-requests", f.limits.max_queued,
            "Complete requests waiting for a worker, per class (agent, long-poll, user); "
            "beyond, 503 at once",
            1, 1'000'000);
  AddRanged(app, "--max-long-polls", f.limits.max_parked,
            "/v1/events long polls parked at once (at most half of --max-connections); "
            "beyond, the oldest is answered at once",
            1, 1'000'000);
  AddRanged(app, "--max-exec-sessions", f.exec.max_total,
            "`tessera exec` sessions open at once (each read holds a long-poll worker while it "
            "waits for output); beyond, 429",
            0, 4096);
  AddRanged(app, "--max-exec-sessions-per-user", f.exec.max_per_user,
            "`tessera exec` sessions one user may have open at once; beyond, 429", 0, 4096);
  AddRanged(app, "--max-connections", f.limits.max_connections,
            "Open connections; a new one beyond evicts the longest idle, else the slowest "
            "to send its request",
            8, 1'000'000);
  AddRanged(app, "--header-timeout", f.header_timeout_s,
            "Seconds from a request's first byte to the end of its headers (then 408)", 0.05,
            3600.0);
  AddRanged(app, "--body-timeout", f.body_timeout_s,
            "Seconds from the end of the headers to the end of the body (then 408)", 0.05, 3600.0);
  AddRanged(app, "--idle-timeout", f.idle_timeout_s,
            "Seconds a keep-alive connection may wait for its next request", 0.05, 3600.0);
}

void AddStoreFlags(CLI::App& app, Flags& f) {
  app.add_option("--store", f.store,
                 "sqlite (one controller, the default) | etcd (several controllers, one leads)")
      ->capture_default_str()
      ->check(CLI::IsMember({"sqlite", "etcd"}));
  app.add_option("--etcd-endpoints", f.etcd_endpoints,
                 "With --store etcd: the etcd members' client URLs, comma-separated");
  app.add_option("--etcd-prefix", f.etcd_prefix, "With --store etcd: the key prefix of the cluster")
      ->capture_default_str();
  // As kube-apiserver's --etcd-cafile, --etcd-certfile and --etcd-keyfile.
  app.add_option("--etcd-ca-file", f.etcd_tls.ca_file,
                 "With https:// etcd endpoints: the CA that signed the members' certificates");
  auto* cert = app.add_option("--etcd-cert-file", f.etcd_tls.cert_file,
                              "With https:// etcd endpoints: this controller's client certificate "
                              "(etcd --client-cert-auth)");
  auto* key =
      app.add_option("--etcd-key-file", f.etcd_tls.key_file, "The private key of --etcd-cert-file");
  cert->needs(key);
  key->needs(cert);
  AddRanged(app, "--lease-ttl", f.lease_ttl_s,
            "With --store etcd: seconds a leader's lease lives without renewal (failover "
            "takes about this long)",
            1, 60);
}

// Authentication and TLS (docs/security.md).
void AddAuthFlags(CLI::App& app, Flags& f) {
  app.add_option("--token-auth-file", f.token_auth_file,
                 "Users' bearer tokens, kube-apiserver's CSV shape: token,user,uid,\"g1,g2\" "
                 "(groups: tessera:admins, tessera:viewers, team:QUEUE, tessera:gateway, "
                 "tessera:metrics; docs/security.md)");
  app.add_option("--bootstrap-token-file", f.bootstrap_token_file,
                 "Tokens (one a line) a new node registers with; each node is then issued a "
                 "credential of its own");
  app.add_option("--node-credentials", f.node_credentials_file,
                 "The credential file of an earlier version (default: node-credentials beside "
                 "the database, or in --state): its nodes are copied into the store, where "
                 "the nodes' credential digests are kept now");
  app.add_option("--tls-cert-file", f.tls_cert_file,
                 "Serve HTTPS with this certificate (PEM; `tessera up` makes one from a local CA)");
  app.add_option("--tls-private-key-file", f.tls_key_file, "The certificate's private key (PEM)");
  app.add_option("--agent-client-cert-file", f.agent_tls.cert_file,
                 "Client certificate presented to the agents' endpoints (task logs, exec), which "
                 "answer only it (kube-apiserver's --kubelet-client-certificate)");
  app.add_option("--agent-client-key-file", f.agent_tls.key_file, "Its private key (PEM)");
  app.add_option("--agent-ca-file", f.agent_tls.ca_file,
                 "CA the agents' certificates are checked against (https agent URLs)");
  app.add_flag("--insecure", f.insecure,
               "No authentication and no TLS (a throwaway cluster on 127.0.0.1 only)");
}

void AddFlags(CLI::App& app, Flags& f) {
  app.add_option("--state", f.state_dir, "State directory (the database is DIR/tesserad.db)");
  app.add_option("--db", f.db_path, "SQLite database file (overrides --state)");
  app.add_option("--listen", f.listen, "Address to listen on")->capture_default_str();
  AddRanged(app, "--port", f.port, "Port; 0 picks a free one", 0, 65535);
  app.add_option("--endpoint-file", f.endpoint_file, "Write http://HOST:PORT here once listening");
  app.add_option("--config", f.config_path,
                 "Controller config YAML (queuePolicy, placementPolicy, recovery, "
                 "sparesPerDomain, ...; the flags override it)");
  app.add_option("--queue-policy", f.queue_policy,
                 "fifo | backfill | srtf | srsf | las | drf | drf-naive (overrides --config)");
  app.add_option("--placement-policy", f.placement_policy,
                 "e.g. bestfit, firstfit, fgd (overrides --config)");
  app.add_flag("--priority-preemption", f.priority_preemption,
               "A job that does not fit preempts running jobs of lower priority (fifo, backfill)");
  app.add_option("--seed", f.seed,
                 "Run seed of the scheduler's seeded draws (ties, GPUs drawn at random), as "
                 "`tessera sim --seed`; recorded with every cycle (default 0)");
  app.add_option("--queues", f.queues_path,
                 "Queue tree YAML (hierarchical quotas, docs/quotas.md) for --queue-policy drf "
                 "or drf-naive; jobs name its leaf queues");
  app.add_option("--colocation", f.colocation_path,
                 "Online/offline co-location YAML (oversell, online, offline, "
                 "evictionCostSeconds; docs/colocation.md): offline work soaks idle and oversold "
                 "GPUs and is evicted first; fifo or backfill, no --priority-preemption");
  AddRanged(app, "--usage-window", f.usage_window_s,
            "Seconds of reported GPU use kept per task; co-location counts a replica's "
            "highest use over it as what it uses",
            1.0, 86400.0);
  app.add_option("--topology-levels", f.topology_levels,
                 "Topology levels, outermost first, e.g. spine,leaf: every agent registers its "
                 "domain at each (tessera-agent --topology spine=s1,leaf=l3)");
  app.add_option("--recovery", f.recovery,
                 "How gangs recover from a lost or drained node unless their spec.recovery says: "
                 "requeue | replace | spares (docs/failures.md); default: --config's "
                 "recovery, else requeue");
  app.add_option("--spares-per-domain", f.spares_per_domain,
                 "Idle spare nodes kept in every leaf domain for recovery (default 1 with "
                 "--recovery spares, else 0)");
  AddRanged(app, "--heartbeat-timeout", f.heartbeat_timeout_s,
            "Seconds of silence before a node is lost", 0.2, 3600.0);
  AddRanged(app, "--heartbeat-interval", f.heartbeat_interval_s, "Seconds between agent heartbeats",
            0.05, 600.0);
  AddRanged(app, "--http-threads", f.http_threads,
            "Worker threads for user requests (connections wait in the front end, not on "
            "a thread)",
            1, 1024);
  AddLimitFlags(app, f);
  app.add_option("--gateway", f.gateway,
                 "tessera-gateway URL whose per-replica in-flight counts and TTFT histogram the "
                 "autoscaler reads (docs/autoscaling.md); none: the replicas' /metrics only");
  AddRanged(app, "--autoscale-interval-ms", f.autoscale_interval_ms,
            "Milliseconds between autoscaling decisions for autoscaled InferenceServices", 100,
            600000);
  AddRanged(app, "--drain-min-ms", f.drain_min_ms,
            "Least milliseconds a scaled-in replica stays out of the gateway's set before it is "
            "stopped (time-compressed benches shorten it)",
            0, 600000);
  AddStoreFlags(app, f);
  AddAuthFlags(app, f);
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
  tessera::ControllerConfigFile file;
  if (!f.config_path.empty()) {
    auto config = tessera::LoadControllerConfig(f.config_path);
    if (!config) return std::unexpected(config.error());
    file = std::move(*config);
    options.scheduler = file.scheduler;
  }
  if (!f.queue_policy.empty()) options.scheduler.queue_policy = f.queue_policy;
  if (!f.placement_policy.empty()) options.scheduler.placement_policy = f.placement_policy;
  if (f.priority_preemption) options.scheduler.priority_preemption = true;
  if (f.seed) options.scheduler.placement.draw_seed = *f.seed;
  if (!f.queues_path.empty()) {
    auto tree = tessera::ReadQueueFile(f.queues_path);
    if (!tree) return std::unexpected(tree.error());
    options.queues = std::move(*tree);
    options.queues_source = f.queues_path;
  }
  if (!f.colocation_path.empty()) {
    auto colocation = tessera::LoadColocationConfig(f.colocation_path);
    if (!colocation) return std::unexpected(colocation.error());
    options.scheduler.colocation = *colocation;
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
  auto recovery = f.recovery.empty()
                      ? std::optional(file.recovery.value_or(tessera::RecoveryMode::kRequeue))
                      : tessera::ParseRecoveryMode(f.recovery);
  if (!recovery) {
    return tessera::InvalidArgument("--recovery: must be one of " +
                                    std::string(tessera::kRecoveryModeNames) + ", got '" +
                                    f.recovery + "'");
  }
  options.recovery = *recovery;
  options.spares_per_domain =
      f.spares_per_domain >= 0
          ? f.spares_per_domain
          : file.spares_per_domain.value_or(*recovery == tessera::RecoveryMode::kSpares);
  if (auto s = tessera::CheckControllerOptions(options); !s) {
    // A co-location file that conflicts with the queue policy or preemption: name the file.
    if (!f.colocation_path.empty() && s.error().message.starts_with("colocation"))
      return tessera::InvalidArgument(f.colocation_path + ": " + s.error().message);
    return std::unexpected(s.error());
  }
  options.usage_window_ms = static_cast<tessera::Tick>(f.usage_window_s * 1000);
  options.heartbeat_timeout_ms = static_cast<tessera::Tick>(f.heartbeat_timeout_s * 1000);
  options.heartbeat_interval_ms = static_cast<tessera::Tick>(f.heartbeat_interval_s * 1000);
  options.gateway_url = f.gateway;
  options.autoscale_interval_ms = f.autoscale_interval_ms;
  options.drain_min_ms = f.drain_min_ms;
  return options;
}

// Who may call the controller: the guard of every request (null with --insecure), and the
// nodes' credentials it consults, attached to the store of each term.
struct Access {
  std::shared_ptr<const tessera::RequestGuard> guard;
  std::shared_ptr<tessera::NodeCredentials> nodes;
  std::string legacy_credentials;  // an earlier version's file, imported into the store
};

// The authentication of every request, from --token-auth-file and --bootstrap-token-file.
Result<Access> AccessFrom(const Flags& f, const std::string& db_path) {
  if (f.insecure) return Access{};
  if (f.token_auth_file.empty()) {
    return tessera::InvalidArgument(
        "authentication is on by default: give --token-auth-file (and --bootstrap-token-file "
        "for the agents), or --insecure for an open cluster on 127.0.0.1");
  }
  auto users = tessera::TokenTable::Load(f.token_auth_file);
  if (!users) return std::unexpected(users.error());
  std::vector<std::string> bootstrap;
  if (!f.bootstrap_token_file.empty()) {
    auto tokens = tessera::ReadTokenLines(f.bootstrap_token_file);
    if (!tokens) return std::unexpected(tokens.error());
    bootstrap = std::move(*tokens);
  }
  Access a;
  a.legacy_credentials = f.node_credentials_file;
  if (a.legacy_credentials.empty() && !db_path.empty()) {
    a.legacy_credentials =
        (std::filesystem::path(db_path).parent_path() / "node-credentials").string();
  }
  if (a.legacy_credentials.empty() && !f.state_dir.empty())
    a.legacy_credentials = f.state_dir + "/node-credentials";
  spdlog::info(
      "authentication on: {} user token(s), {} bootstrap token(s), node credentials "
      "in the store",
      users->size(), bootstrap.size());
  a.nodes = std::make_shared<tessera::NodeCredentials>(bootstrap);
  a.guard = std::make_shared<const tessera::RequestGuard>(std::move(*users), a.nodes);
  return a;
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

// Serves `store` until a signal, or until `signals.Interrupt()` (an etcd leader's term ended).
int Serve(const Flags& f, tessera::Store& store, const std::string& store_name, int port,
          tessera::ControllerOptions options, tessera::ProcessSignals& signals,
          const Access& access) {
  auto endpoint = std::make_shared<std::string>();
  if (!options.controllers) {
    // One controller: itself, the leader.
    options.controllers = [endpoint] {
      return nlohmann::json::array(
          {{{"url", *endpoint}, {"pid", static_cast<int>(::getpid())}, {"leader", true}}});
    };
  }
  auto controller = tessera::Controller::Create(&store, options);
  if (!controller) {
    spdlog::error("{}", controller.error().message);
    return 1;
  }
  tessera::ApiServer server(**controller, f.http_threads);
  tessera::FrontendLimits limits = f.limits;
  limits.user_threads = f.http_threads;
  limits.header_timeout_ms = static_cast<int>(f.header_timeout_s * 1000);
  limits.body_timeout_ms = static_cast<int>(f.body_timeout_s * 1000);
  limits.idle_timeout_ms = static_cast<int>(f.idle_timeout_s * 1000);
  server.SetLimits(limits);
  if (!f.tls_cert_file.empty()) {
    if (auto s = server.EnableTls(f.tls_cert_file, f.tls_key_file); !s) {
      spdlog::error("{}", s.error().message);
      return 1;
    }
  }
  if (access.guard) server.RequireAuth(access.guard);
  if (access.nodes) {
    if (auto s = access.nodes->Attach(store, access.legacy_credentials); !s) {
      spdlog::error("node credentials: {}", s.error().message);
      return 1;
    }
  }
  // The store is this term's: not used once Serve returns.
  const std::unique_ptr<tessera::NodeCredentials, void (*)(tessera::NodeCredentials*)> detach(
      access.nodes.get(), [](tessera::NodeCredentials* n) {
        if (n != nullptr) n->Detach();
      });
  server.SetAgentTls(f.agent_tls);
  server.SetExecLimits(f.exec);
  auto bound = tessera::BindRetrying([&] { return server.Bind(f.listen, port); });
  if (!bound) {
    spdlog::error("{}", bound.error().message);
    return 1;
  }
  (*controller)->Start();
  const std::string host = f.listen == "0.0.0.0" ? "127.0.0.1" : f.listen;
  const std::string scheme = f.tls_cert_file.empty() ? "http://" : "https://";
  *endpoint = scheme + host + ":" + std::to_string(*bound);
  const auto status = (*controller)->ServerStatus();
  spdlog::info(
      "serving {} (store {}, {} jobs loaded in {} ms, queue policy {}, placement {}, seed {})",
      *endpoint, store_name, status["loadedJobs"].get<std::size_t>(),
      status["loadMs"].get<std::int64_t>(), options.scheduler.queue_policy,
      options.scheduler.placement_policy, options.scheduler.placement.draw_seed);
  // On etcd the standby wrote it, on this same port (and `tessera up` may have listed others).
  if (!f.endpoint_file.empty() && f.store != "etcd" &&
      !WriteFileAtomically(f.endpoint_file, *endpoint + "\n")) {
    spdlog::error("cannot write {}", f.endpoint_file);
    return 1;
  }
  signals.SetStopper([&server] { server.Stop(); });
  if (!signals.stop_requested()) server.Serve();
  signals.SetStopper(nullptr);
  (*controller)->Stop();
  return 0;
}

int ServeSqlite(const Flags& f, const std::string& db_path,
                const tessera::ControllerOptions& options, tessera::ProcessSignals& signals,
                const Access& access) {
  auto store = tessera::SqliteStore::Open(db_path);
  if (!store) {
    spdlog::error("{}", store.error().message);
    return 1;
  }
  const int rc = Serve(f, **store, db_path, f.port, options, signals, access);
  spdlog::info("stopped");
  return rc;
}

// --store etcd: a standby until this controller wins the election, then the leader with a
// fenced EtcdStore; a term that ends re-executes the process, which comes back as a standby.
int ServeEtcd(const Flags& f, const tessera::ControllerOptions& options,
              tessera::ProcessSignals& signals, char** argv, const Access& access) {
  tessera::EtcdServing::Options o;
  for (std::size_t start = 0; start < f.etcd_endpoints.size();) {
    const std::size_t comma = std::min(f.etcd_endpoints.find(',', start), f.etcd_endpoints.size());
    if (comma > start) o.endpoints.push_back(f.etcd_endpoints.substr(start, comma - start));
    start = comma + 1;
  }
  if (o.endpoints.empty()) {
    spdlog::error("--store etcd needs --etcd-endpoints URL[,URL...]");
    return 2;
  }
  o.etcd_tls = f.etcd_tls;
  o.prefix = f.etcd_prefix;
  o.lease_ttl_s = f.lease_ttl_s;
  o.listen = f.listen;
  o.port = f.port;
  o.endpoint_file = f.endpoint_file;
  o.tls_cert_file = f.tls_cert_file;
  o.tls_key_file = f.tls_key_file;
  tessera::EtcdServing serving(std::move(o), signals);
  const auto outcome = serving.Run(
      [&](tessera::Store& store, const std::string& name, int port,
          tessera::ControllerOptions leader_options) {
        return Serve(f, store, name, port, std::move(leader_options), signals, access);
      },
      options);
  if (outcome == tessera::EtcdServing::Outcome::kTermEnded) tessera::ReExecute(argv);
  spdlog::info("stopped");
  return outcome == tessera::EtcdServing::Outcome::kFailed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Signals are taken by one thread; every other thread inherits the blocked mask.
  tessera::ProcessSignals signals;
  CLI::App app{"tesserad: the Tessera controller"};
  Flags flags;
  AddFlags(app, flags);
  CLI11_PARSE(app, argc, argv);
  spdlog::set_default_logger(spdlog::stderr_color_mt("tesserad"));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %n: %v");

  if (const char* port = std::getenv(tessera::kReexecPortVariable); port && flags.store == "etcd")
    flags.port = std::atoi(port);
  ::umask(077);  // the database, its journal, the credentials and the endpoint: 0600
  auto db_path = flags.store == "etcd" ? Result<std::string>("") : DatabasePath(flags);
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
  if (flags.agent_tls.cert_file.empty() != flags.agent_tls.key_file.empty()) {
    spdlog::error("give --agent-client-cert-file and --agent-client-key-file together");
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
  auto access = AccessFrom(flags, *db_path);
  if (!access) {
    spdlog::error("{}", access.error().message);
    return 2;
  }
  for (const char* suffix : {"", "-wal", "-shm"}) {
    if (!db_path->empty()) ::chmod((*db_path + suffix).c_str(), 0600);  // made before 0600
  }
  if (flags.store == "etcd") return ServeEtcd(flags, *options, signals, argv, *access);
  return ServeSqlite(flags, *db_path, *options, signals, *access);
}
