// `tessera up`: an all-in-one cluster on this machine: tesserad and N agents with simulated
// GPUs, all on 127.0.0.1, their state (database, pid files, logs, endpoint) in one directory.
// Returns once every node has registered. Running it again on a stopped cluster's directory
// brings the same cluster back, jobs included.
// On the directory of a crashed controller whose agents still run, the controller comes back
// on its old port, where they look for it, and the agents are left alone, so their tasks are
// re-adopted instead of restarted.
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <thread>

#include "agent/gpu_inventory.h"
#include "cli/commands.h"
#include "cli/daemon.h"
#include "cli/live_client.h"
#include "cli/live_commands.h"
#include "cli/up_cluster.h"
#include "cli/up_credentials.h"
#include "cli/up_etcd.h"
#include "cli/up_tls.h"
#include "spec/colocation_file.h"

namespace tessera::cli {

namespace {

struct UpFlags {
  std::string state;
  int agents = 2;
  int simulate_nodes = 0;  // nodes emulated by each agent; 0 = one node per agent
  std::string gpus = "8xH100";
  int port = 0;
  double heartbeat_timeout = 10;
  std::string queue_policy;
  bool priority_preemption = false;
  std::optional<std::uint64_t> seed;  // tesserad --seed
  std::string queues;                 // queue tree YAML for drf / drf-naive
  std::string colocation;             // tesserad --colocation (docs/colocation.md)
  double usage_window = 0;            // tesserad --usage-window; 0: its default
  std::string placement_policy;
  std::string bin_dir;
  double timeout = 30;
  std::string cluster;   // the simulator's cluster file (up_cluster.h); replaces --agents/--gpus
  std::string recovery;  // tesserad --recovery
  int spares_per_domain = -1;
  std::string store = "sqlite";  // or etcd: a 3-member etcd cluster and --controllers of them
  int controllers = 1;
  bool insecure = false;     // no authentication (and no TLS): a throwaway laptop cluster
  int gateway_port = -1;     // >= 0: tessera-gateway on it (0: a free one), tesserad --gateway
  std::string gateway_url;   // filled from gateway_port
  bool store_given = false;  // --store on the command line (else: the state's own)
  bool controllers_given = false;  // --controllers on the command line
};

// The store a state directory's cluster keeps its jobs in, and how many controllers it ran
// (STATE/store: "etcd 2"), so that `tessera up` on the same state picks them again.
constexpr const char* kStoreFile = "/store";

// Takes the store (and controllers) the state used unless given; refuses another store, whose
// cluster would start empty beside the old one's jobs.
Status ResolveStore(UpFlags& f, const std::string& state) {
  std::ifstream in(state + kStoreFile);
  std::string store;
  int controllers = 0;
  if (!(in >> store)) return {};  // a new state, or one from before the file existed
  in >> controllers;
  if (store != "sqlite" && store != "etcd")
    return FailedPrecondition(state + kStoreFile + ": unknown store '" + store + "'");
  if (f.store_given && f.store != store) {
    return FailedPrecondition("--store " + f.store + ": the cluster in " + state +
                              " keeps its state in " + store + " (" + state + kStoreFile +
                              "); use another --state for a new cluster");
  }
  f.store = store;
  if (!f.controllers_given && controllers >= 1 && controllers <= 9) f.controllers = controllers;
  return {};
}

// How the cluster's parts prove who they are (docs/security.md): the controller's flags, what
// every agent is given, and what the CLI is left with (tessera.config).
struct UpAccess {
  std::optional<UpCredentials> creds;
  std::optional<UpTls> tls;
  std::vector<std::string> controller_args;
  std::vector<std::string> agent_args;
};

// Tokens and TLS, made once in the state directory; --insecure: neither. Every controller,
// leader or standby, serves HTTPS; the agents' endpoints are HTTPS and answer task logs and
// exec to the controller's client certificate only.
Result<UpAccess> PrepareAccess(const UpFlags& f, const std::string& state) {
  UpAccess a;
  if (f.insecure) {
    a.controller_args = {"--insecure"};
    return a;
  }
  auto creds = EnsureUpCredentials(state);
  if (!creds) return std::unexpected(creds.error());
  a.creds = *creds;
  a.controller_args = {"--token-auth-file", a.creds->token_file, "--bootstrap-token-file",
                       a.creds->bootstrap_file};
  a.agent_args = {"--bootstrap-token-file", a.creds->bootstrap_file};
  auto tls = EnsureUpTls(state);
  if (!tls) return std::unexpected(tls.error());
  a.controller_args.insert(
      a.controller_args.end(),
      {"--agent-client-cert-file", tls->client_cert_file, "--agent-client-key-file",
       tls->client_key_file, "--agent-ca-file", tls->ca_file});
  a.agent_args.insert(a.agent_args.end(),
                      {"--tls-cert-file", tls->agent_cert_file, "--tls-private-key-file",
                       tls->agent_key_file, "--client-ca-file", tls->ca_file});
  a.tls = *tls;
  a.controller_args.insert(a.controller_args.end(), {"--tls-cert-file", a.tls->cert_file,
                                                     "--tls-private-key-file", a.tls->key_file});
  a.agent_args.insert(a.agent_args.end(), {"--ca-file", a.tls->ca_file});
  return a;
}

// The port of the (first) controller that last ran in `state`, from its endpoint file (a
// comma-separated list with several controllers); 0 if none.
int PreviousPort(const std::string& state) {
  std::ifstream in(state + "/endpoint");
  std::string url;
  std::getline(in, url);
  url = url.substr(0, url.find(','));
  const auto colon = url.rfind(':');
  if (colon == std::string::npos) return 0;
  int port = 0;
  const char* begin = url.data() + colon + 1;
  auto [ptr, ec] = std::from_chars(begin, url.data() + url.size(), port);
  return ec == std::errc() && port > 0 && port < 65536 ? port : 0;
}

// The --server URL in a live process's command line.
std::string ServerOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
  std::string arg;
  bool next = false;
  while (std::getline(in, arg, '\0')) {
    if (next) return arg;
    next = arg == "--server";
  }
  return "";
}

// True for a live agent of this state still polling `url` (a crashed controller's): it keeps
// its tasks and the controller re-adopts them. Any other leftover is stopped.
bool KeepOrStopAgent(const std::string& pid_file, const std::string& url) {
  auto old = LivePid(pid_file, "tessera-agent");
  if (!old) return false;
  if (ServerOf(*old) == url) return true;
  Terminate(*old, "tessera-agent", 15000);
  return false;
}

std::string Tail(const std::string& path, std::size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  std::string line;
  while (std::getline(in, line)) all.push_back(line);
  std::string out;
  for (std::size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) {
    out += "    " + all[i] + "\n";
  }
  return out;
}

// One agent emulating every node of the cluster file; refuses (and stops the controller) when
// the store already holds a cluster the file contradicts.
Status StartClusterAgent(const ClusterUpPlan& plan, const std::string& agent,
                         const std::string& url, const std::string& state, pid_t controller,
                         const UpAccess& access, std::vector<std::string>& names, int& readopted) {
  ApiClient api(url, 5);
  auto known = JsonOf(api.Get("/v1/nodes"));
  if (!known) return std::unexpected(known.error());
  if (auto s = CheckClusterAgainstNodes(plan, (*known)["nodes"]); !s) {
    Terminate(controller, "tesserad", 10000);
    return s;
  }
  const std::string file = state + "/cluster-nodes.json";
  if (!WriteText(file, TopologyFileText(plan.nodes))) return IoError("cannot write " + file);
  const std::string node = "cluster";
  for (const auto& n : plan.nodes.nodes) names.push_back(n.name);
  if (KeepOrStopAgent(state + "/agents/" + node + ".pid", url)) {
    ++readopted;
    return {};
  }
  std::vector<std::string> argv = {agent,
                                   "--server",
                                   url,
                                   "--node",
                                   node,
                                   "--state",
                                   state + "/agents/" + node,
                                   "--simulate-nodes",
                                   std::to_string(plan.nodes.nodes.size()),
                                   "--topology-file",
                                   file};
  argv.insert(argv.end(), access.agent_args.begin(), access.agent_args.end());
  auto apid = SpawnDetached(argv, state + "/logs/agent-" + node + ".log");
  if (!apid) return std::unexpected(apid.error());
  WriteText(state + "/agents/" + node + ".pid", std::to_string(*apid) + "\n");
  return {};
}

// tesserad's command line for f.port (with --store etcd: `store_args`, how to reach etcd).
std::vector<std::string> ControllerArgv(const UpFlags& f, const std::string& state,
                                        const std::string& tesserad,
                                        const std::optional<ClusterUpPlan>& plan,
                                        const std::vector<std::string>& store_args,
                                        const UpAccess& access) {
  std::vector<std::string> argv = {tesserad,
                                   "--state",
                                   state,
                                   "--port",
                                   std::to_string(f.port),
                                   "--endpoint-file",
                                   state + "/endpoint",
                                   "--heartbeat-timeout",
                                   std::to_string(f.heartbeat_timeout)};
  if (!f.queue_policy.empty()) argv.insert(argv.end(), {"--queue-policy", f.queue_policy});
  if (!f.placement_policy.empty())
    argv.insert(argv.end(), {"--placement-policy", f.placement_policy});
  if (f.priority_preemption) argv.push_back("--priority-preemption");
  if (f.seed) argv.insert(argv.end(), {"--seed", std::to_string(*f.seed)});
  if (!f.queues.empty()) {
    // tesserad runs detached from this directory: hand it an absolute path.
    argv.insert(argv.end(),
                {"--queues", std::filesystem::absolute(f.queues).lexically_normal().string()});
  }
  if (!f.colocation.empty()) {
    argv.insert(argv.end(), {"--colocation",
                             std::filesystem::absolute(f.colocation).lexically_normal().string()});
  }
  if (f.usage_window > 0)
    argv.insert(argv.end(), {"--usage-window", std::to_string(f.usage_window)});
  if (plan && !plan->levels.empty())
    argv.insert(argv.end(), {"--topology-levels", JoinLevels(plan->levels)});
  if (!f.recovery.empty()) argv.insert(argv.end(), {"--recovery", f.recovery});
  if (f.spares_per_domain >= 0)
    argv.insert(argv.end(), {"--spares-per-domain", std::to_string(f.spares_per_domain)});
  argv.insert(argv.end(), store_args.begin(), store_args.end());
  if (!f.gateway_url.empty()) argv.insert(argv.end(), {"--gateway", f.gateway_url});
  argv.insert(argv.end(), access.controller_args.begin(), access.controller_args.end());
  return argv;
}

// tessera-gateway in front of the cluster's InferenceServices (it finds the controller, its
// token and CA from the state directory); waits for its /health.
Status StartGateway(const UpFlags& f, const std::string& state, const std::string& gateway) {
  if (auto old = LivePid(state + "/gateway.pid", "tessera-gateway")) {
    Terminate(*old, "tessera-gateway", 5000);  // a crashed cluster's: it looks for the old one
  }
  const std::string log = state + "/logs/gateway.log";
  auto pid = SpawnDetached({gateway, "--state", state, "--listen", "127.0.0.1", "--port",
                            std::to_string(f.gateway_port)},
                           log);
  if (!pid) return std::unexpected(pid.error());
  WriteText(state + "/gateway.pid", std::to_string(*pid) + "\n");
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<long>(f.timeout * 1000));
  httplib::Client c(f.gateway_url);
  c.set_connection_timeout(0, 200000);
  while (true) {
    if (auto r = c.Get("/health"); r && r->status == 200) break;
    if (!ProcessIs(*pid, "tessera-gateway")) {
      return FailedPrecondition("tessera-gateway exited during start-up; its log " + log +
                                " ends with:\n" + Tail(log, 10));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return FailedPrecondition("tessera-gateway did not answer within " + Number(f.timeout) +
                                "s; see " + log);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  WriteText(state + "/gateway-endpoint", f.gateway_url + "\n");
  std::cout << "gateway: " << f.gateway_url << " (tessera-gateway, pid " << *pid << ")\n";
  return {};
}

// Starts tesserad with `argv` and waits for its endpoint file; returns its URL.
Result<std::string> StartController(const UpFlags& f, const std::string& state,
                                    const std::vector<std::string>& argv) {
  const std::string controller_log = state + "/logs/tesserad.log";
  auto pid = SpawnDetached(argv, controller_log);
  if (!pid) return std::unexpected(pid.error());
  WriteText(state + "/tesserad.pid", std::to_string(*pid) + "\n");

  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<long>(f.timeout * 1000));
  std::string url;
  while (url.empty()) {
    std::ifstream in(state + "/endpoint");
    std::getline(in, url);
    if (!url.empty()) break;
    if (!ProcessIs(*pid, "tesserad")) {
      return FailedPrecondition("tesserad exited during start-up; its log " + controller_log +
                                " ends with:\n" + Tail(controller_log, 10));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return FailedPrecondition("tesserad did not start within " + Number(f.timeout) + "s; see " +
                                controller_log);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return url;
}

// An agent per node, except those still running against `url` (a crashed controller's): they
// keep their tasks and are counted in `readopted`. Fills `names`.
Status StartAgents(const UpFlags& f, const std::string& state, const std::string& agent,
                   const std::string& url, const UpAccess& access, std::vector<std::string>& names,
                   int& readopted) {
  for (int i = 0; i < f.agents; ++i) {
    const std::string node = "node-" + std::to_string(i);
    if (f.simulate_nodes == 0) {
      names.push_back(node);
    } else {
      for (int k = 0; k < f.simulate_nodes; ++k) {
        char suffix[16];
        std::snprintf(suffix, sizeof suffix, "-%04d", k);
        names.push_back(node + suffix);
      }
    }
    if (KeepOrStopAgent(state + "/agents/" + node + ".pid", url)) {
      ++readopted;
      continue;
    }
    std::vector<std::string> agent_argv = {agent,
                                           "--server",
                                           url,
                                           "--node",
                                           node,
                                           "--state",
                                           state + "/agents/" + node,
                                           "--simulate-gpus",
                                           f.gpus};
    if (f.simulate_nodes > 0) {
      agent_argv.insert(agent_argv.end(), {"--simulate-nodes", std::to_string(f.simulate_nodes)});
    }
    agent_argv.insert(agent_argv.end(), access.agent_args.begin(), access.agent_args.end());
    auto apid = SpawnDetached(agent_argv, state + "/logs/agent-" + node + ".log");
    if (!apid) return std::unexpected(apid.error());
    WriteText(state + "/agents/" + node + ".pid", std::to_string(*apid) + "\n");
  }
  return {};
}

// Waits until every node is Ready, then says how to use the cluster.
Status WaitUntilReady(const UpFlags& f, const std::string& state, const std::string& url,
                      const std::vector<std::string>& names, pid_t pid, int readopted,
                      const std::optional<ClusterUpPlan>& plan, const UpAccess& access) {
  const std::string controller_log = state + "/logs/tesserad.log";
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<long>(f.timeout * 1000));
  ApiClient api(url, 5);
  const std::set<std::string> expected(names.begin(), names.end());
  while (true) {
    std::size_t ready = 0;
    if (auto nodes = JsonOf(api.Get("/v1/nodes"))) {
      for (const auto& n : (*nodes)["nodes"]) {
        const std::string name = n.value("name", "");
        if (n.value("status", "") == "Ready" && n.value("lastHeartbeatAgoMs", 1 << 30) < 5000 &&
            expected.contains(name)) {
          ++ready;
        }
      }
    }
    if (ready == names.size()) break;
    if (std::chrono::steady_clock::now() > deadline) {
      return FailedPrecondition(std::to_string(ready) + " of " + std::to_string(names.size()) +
                                " nodes registered within " + Number(f.timeout) + "s; see " +
                                state + "/logs/");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const auto gpus = SimulatedGpus(f.gpus, "node-0");
  std::cout << "Cluster up in " << state << "\n"
            << "  controller  " << url << "  (pid " << pid << ", log " << controller_log << ")\n"
            << "  nodes       "
            << (plan ? plan->summary
                     : std::to_string(names.size()) + " x " + std::to_string(gpus->gpus.size()) +
                           " " + (gpus->gpus.empty() ? std::string("GPU") : gpus->gpus[0].model) +
                           " (simulated GPUs)")
            << ": " << names.front() << (names.size() > 1 ? " .. " + names.back() : "") << "\n";
  std::cout << "  access      "
            << (!access.creds
                    ? std::string("--insecure: plain HTTP, no authentication")
                    : (access.tls ? "TLS (CA " + access.tls->ca_file + ") and " : "") +
                          "bearer tokens (admin token in " + access.creds->admin_token_file +
                          "; the CLI finds it through --state)")
            << "\n";
  if (readopted > 0) {
    std::cout << "  re-adopted  " << readopted
              << " running agent(s) of the previous controller: their tasks keep running\n";
  }
  std::cout << "Next:\n"
            << "  export TESSERA_STATE=" << state << "\n"
            << (f.queues.empty() ? "  tessera submit -f examples/jobs/training-job.yaml\n"
                                 : "  tessera get queues      # jobs name one of these leaf "
                                   "queues (metadata.queue)\n")
            << "  tessera get jobs\n";
  return {};
}

Status RunUp(UpFlags f) {
  namespace fs = std::filesystem;
  if (f.state.empty()) {
    if (const char* env = std::getenv("TESSERA_STATE"); env != nullptr) f.state = env;
  }
  if (f.state.empty()) return InvalidArgument("--state DIR is required (or set TESSERA_STATE)");
  if (f.agents < 1 || f.agents > 256) return InvalidArgument("--agents must be between 1 and 256");
  if (f.simulate_nodes < 0 || f.simulate_nodes > 100000) {
    return InvalidArgument("--simulate-nodes must be between 0 and 100000");
  }
  if (auto gpus = SimulatedGpus(f.gpus, "node-0"); !gpus) return std::unexpected(gpus.error());
  if (!f.colocation.empty()) {
    // Its shape now; tesserad checks it against the queue policy and says so before starting.
    if (auto c = LoadColocationConfig(f.colocation); !c) return std::unexpected(c.error());
  }
  std::error_code ec;
  fs::create_directories(f.state + "/logs", ec);
  fs::create_directories(f.state + "/agents", ec);
  if (ec) return IoError("cannot create " + f.state + ": " + ec.message());
  const std::string state = fs::canonical(f.state).string();
  fs::permissions(state, fs::perms::owner_all, ec);  // the database, tokens and logs: ours only
  const std::string bin = f.bin_dir.empty() ? SelfDirectory() : f.bin_dir;
  const std::string tesserad = bin + "/tesserad";
  const std::string agent = bin + "/tessera-agent";
  const std::string gateway = bin + "/tessera-gateway";
  for (const auto& exe : {tesserad, agent}) {
    if (::access(exe.c_str(), X_OK) != 0) {
      return FailedPrecondition(exe + " not found or not executable (pass --bin-dir)");
    }
  }
  if (f.gateway_port >= 0) {
    if (::access(gateway.c_str(), X_OK) != 0)
      return FailedPrecondition("--gateway-port: " + gateway + " not found or not executable");
    if (f.gateway_port == 0) {
      auto port = PickFreePort();
      if (!port) return std::unexpected(port.error());
      f.gateway_port = *port;
    }
    f.gateway_url = "http://127.0.0.1:" + std::to_string(f.gateway_port);
  }
  if (auto pid = LivePid(state + "/tesserad.pid", "tesserad")) {
    return FailedPrecondition("a cluster is already running in " + state + " (tesserad pid " +
                              std::to_string(*pid) + "); stop it with `tessera down --state " +
                              state + "`");
  }
  if (auto s = ResolveStore(f, state); !s) return s;
  if (f.store != "etcd" && f.controllers != 1)
    return InvalidArgument("--controllers: several controllers need --store etcd");
  if (!WriteText(state + kStoreFile, f.store + " " + std::to_string(f.controllers) + "\n"))
    return IoError("cannot write " + state + kStoreFile);
  std::optional<ClusterUpPlan> plan;
  if (!f.cluster.empty()) {
    auto p = PlanClusterUp(f.cluster, f.spares_per_domain);
    if (!p) return std::unexpected(p.error());
    plan = std::move(*p);
  }

  // A crashed controller's agents still look for it at its old port: take that one again.
  const int previous_port = f.port == 0 ? PreviousPort(state) : 0;
  if (previous_port != 0) f.port = previous_port;
  fs::remove(state + "/endpoint", ec);
  auto access = PrepareAccess(f, state);
  if (!access) return std::unexpected(access.error());
  std::vector<std::string> store_args;
  if (f.store == "etcd") {
    auto etcd = StartEtcdCluster(state, f.timeout, access->tls ? &*access->tls : nullptr);
    if (!etcd) return std::unexpected(etcd.error());
    store_args = etcd->tesserad_args;
    if (f.port == 0) {
      // A port of its own from the start: a controller whose term ends comes back on it.
      auto port = PickFreePort();
      if (!port) return std::unexpected(port.error());
      f.port = *port;
    }
  }
  auto argv = ControllerArgv(f, state, tesserad, plan, store_args, *access);
  auto url = StartController(f, state, argv);
  if (!url && previous_port != 0 && url.error().message.find("cannot bind") != std::string::npos) {
    // Someone else took the port meanwhile: any free one, and the agents restart to find it.
    std::cerr << "tessera up: port " << previous_port
              << " is no longer free; the controller takes another, and the agents restart\n";
    f.port = 0;
    argv = ControllerArgv(f, state, tesserad, plan, store_args, *access);
    url = StartController(f, state, argv);
  }
  if (!url) return std::unexpected(url.error());
  if (f.controllers > 1) {
    auto more = StartMoreControllers(argv, state, f.controllers, f.timeout);
    if (!more) return std::unexpected(more.error());
    for (const auto& u : *more) *url += "," + u;  // agents and the CLI follow the leader
    WriteText(state + "/endpoint", *url + "\n");
  }
  // The CA of the controllers and of the agents' endpoints (which `tessera top` reads).
  const bool ca = access->tls.has_value();
  if (auto s = WriteContext(state, *url, ca ? "tls/ca.crt" : "",
                            access->creds ? "auth/admin.token" : "");
      !s)
    return std::unexpected(s.error());
  RememberAccess(*url, access->creds ? access->creds->admin_token : "",
                 ca ? state + "/tls/ca.crt" : "");
  const pid_t pid = LivePid(state + "/tesserad.pid", "tesserad").value_or(0);
  std::vector<std::string> names;
  int readopted = 0;
  if (plan) {
    // The one agent of the file's nodes instead of --agents.
    if (auto s = StartClusterAgent(*plan, agent, *url, state, pid, *access, names, readopted); !s)
      return s;
  } else if (auto s = StartAgents(f, state, agent, *url, *access, names, readopted); !s) {
    return s;
  }
  if (auto s = WaitUntilReady(f, state, *url, names, pid, readopted, plan, *access); !s) return s;
  if (f.gateway_port >= 0) return StartGateway(f, state, gateway);
  return {};
}

}  // namespace

void RegisterUpCommand(CLI::App& app) {
  auto flags = std::make_shared<UpFlags>();
  auto* cmd = app.add_subcommand(
      "up", "Start an all-in-one cluster: tesserad and N agents with simulated GPUs on 127.0.0.1");
  cmd->add_option("--state", flags->state,
                  "State directory (database, logs, pid files); default $TESSERA_STATE");
  cmd->add_option("--agents", flags->agents, "Number of agents (nodes)")->capture_default_str();
  cmd->add_option("--simulate-nodes", flags->simulate_nodes,
                  "Nodes each agent emulates (node-<agent>-0000, ...); 0 = one node per agent")
      ->capture_default_str();
  cmd->add_option("--gpus", flags->gpus, "Simulated GPUs per node, COUNTxMODEL")
      ->capture_default_str();
  cmd->add_option("--port", flags->port, "Controller port; 0 picks a free one")
      ->capture_default_str();
  cmd->add_option("--heartbeat-timeout", flags->heartbeat_timeout,
                  "Seconds before a silent node is lost")
      ->capture_default_str();
  cmd->add_option("--queue-policy", flags->queue_policy,
                  "Scheduler queue policy (default fifo; drf and drf-naive need --queues)");
  cmd->add_option("--queues", flags->queues,
                  "Queue tree YAML: teams' quotas, borrowing, weights (docs/quotas.md)");
  cmd->add_option("--placement-policy", flags->placement_policy,
                  "Placement policy (default bestfit)");
  cmd->add_option("--colocation", flags->colocation,
                  "Online/offline co-location YAML (examples/config/colocation.yaml, "
                  "docs/colocation.md): offline BatchJobs soak idle and oversold GPUs");
  cmd->add_option("--usage-window", flags->usage_window,
                  "tesserad --usage-window: seconds of reported GPU use co-location reads");
  cmd->add_option("--seed", flags->seed,
                  "tesserad --seed: the run seed of the scheduler's seeded draws, as `tessera sim "
                  "--seed` (default 0)");
  cmd->add_flag("--priority-preemption", flags->priority_preemption,
                "Let a job that does not fit preempt running jobs of lower priority");
  cmd->add_option("--bin-dir", flags->bin_dir,
                  "Where tesserad and tessera-agent are (default: beside tessera)");
  cmd->add_option("--cluster", flags->cluster,
                  "The simulator's cluster file (docs/cluster-spec.md): one emulated node per node "
                  "of it, with its name, GPUs and topology (instead of --agents and --gpus)");
  cmd->add_option("--recovery", flags->recovery, "tesserad --recovery: requeue | replace | spares");
  cmd->add_option("--spares-per-domain", flags->spares_per_domain,
                  "tesserad --spares-per-domain: idle spare nodes per leaf domain");
  auto* store =
      cmd->add_option(
             "--store", flags->store,
             "sqlite (one controller) | etcd (a 3-member etcd cluster on loopback, data in "
             "STATE/etcd; controllers elect a leader); default: what STATE used before, "
             "else sqlite")
          ->capture_default_str()
          ->check(CLI::IsMember({"sqlite", "etcd"}));
  auto* controllers =
      cmd->add_option("--controllers", flags->controllers,
                      "Controllers (with --store etcd): one leads, the others stand by")
          ->capture_default_str()
          ->check(CLI::Range(1, 9));
  cmd->add_flag("--insecure", flags->insecure,
                "No authentication and no TLS: any local process may use the cluster (throwaway "
                "clusters)");
  cmd->add_option("--gateway-port", flags->gateway_port,
                  "Also start tessera-gateway in front of the InferenceServices on this port of "
                  "127.0.0.1 (0: a free one); tesserad learns its URL (--gateway)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--timeout", flags->timeout, "Seconds to wait for the cluster to be ready")
      ->capture_default_str();
  cmd->callback([flags, store, controllers] {
    flags->store_given = store->count() > 0;
    flags->controllers_given = controllers->count() > 0;
    SetExitCode(RunOrReport([&] { return RunUp(*flags); }));
  });
}

}  // namespace tessera::cli
