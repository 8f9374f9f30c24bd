// tessera-agent: one per node, or one for many emulated nodes (--simulate-nodes N, KWOK-style:
// each node has its own simulated GPUs and heartbeat, all exchanged in one request). Registers the
// node (GPUs from NVML or simulated), then loops on heartbeats: each reports every task it knows
// and long-polls for what should run and stop there. Tasks are launched by the Launcher and
// supervised here: exits are reaped, reported at once (and again in every heartbeat until the
// controller says to forget them), stops are SIGTERM then SIGKILL after the job's grace period.
// Task logs and `tessera exec` sessions are served on the agent's own endpoint, over TLS to the
// controller only (agent_endpoint.cpp, endpoint_tls.h).
//
// The agent outlives controller restarts: it keeps its tasks running and reports them when the
// controller is back, which re-adopts them. After its own restart it kills what its previous
// incarnation left behind (it cannot wait for them) and reports those tasks lost.
//
// Thread-safety: Run() on one thread; RequestStop() from any thread (e.g. a signal thread).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "agent/agent_credential.h"
#include "agent/agent_metrics.h"
#include "agent/endpoint_tls.h"
#include "agent/exec_session.h"
#include "agent/gpu_inventory.h"
#include "agent/launcher.h"
#include "agent/nvml_usage.h"
#include "agent/task_usage.h"
#include "core/status.h"
#include "spec/controller_urls.h"
#include "spec/protocol.h"
#include "spec/topology_file.h"

namespace httplib {
class Server;
class Result;
struct Request;
struct Response;
}  // namespace httplib

namespace tessera {

struct AgentOptions {
  // The controller, or several (etcd: one leads): "URL" or "URL,URL,..." (controller_urls.h).
  std::string server_url = "http://127.0.0.1:7480";
  std::string node;                       // default: the host name
  std::string state_dir;                  // logs, task records and work directories live here
  std::string address = "127.0.0.1";      // advertised for MASTER_ADDR
  std::string listen_host = "127.0.0.1";  // the log endpoint
  int listen_port = 0;
  std::optional<std::string> simulate_gpus;  // "8xH100"; otherwise NVML
  // Emulate this many nodes named <node>-0000, <node>-0001, ... (each with simulate_gpus);
  // 0 = one real node named <node>. Their tasks still run real processes here.
  int simulate_nodes = 0;
  // Where the node sits: level -> domain (`--topology leaf=l3,spine=s1`), sent at registration;
  // with simulate_nodes every emulated node gets it.
  std::map<std::string, std::string> topology;
  // With simulate_nodes: the emulated nodes by name, GPUs and place (--topology-file), instead
  // of <node>-0000 ... with simulate_gpus and `topology`.
  std::vector<TopologyFileNode> emulated;
  // Run no process: each task is a simulated one (simulated_task.h) that holds its GPUs for
  // its `sleep SECONDS` and exits 0. Needs simulated GPUs; for benchmarks at scale.
  bool simulate_tasks = false;
  std::optional<std::string> run_as;
  bool cgroups = true;
  std::int64_t cpu_milli = 0;       // 0 = all cores of the machine
  std::int64_t memory_mib = 0;      // 0 = all memory of the machine
  bool keep_tasks_on_exit = false;  // on SIGTERM, leave tasks running instead of stopping them
  int exit_grace_seconds = 10;      // cap on the grace period when the agent itself stops
  // The cluster's bootstrap token, for registering nodes that have no credential yet
  // (agent_credential.h); empty for a controller without authentication.
  std::string bootstrap_token_file;
  std::string ca_file;  // the CA of the controller's certificate, for an https URL
  // The endpoint's TLS and the controller's client certificate it answers (endpoint_tls.h);
  // without TLS the endpoint is open to local processes, so it listens on loopback only.
  EndpointTls endpoint_tls;
};

// Takes a --topology-file into `o`: its top-level place, or the entry named o.node (one real
// node), or with o.simulate_nodes every node it lists (simulate_nodes becomes their count).
Status ApplyTopologyFile(const TopologyFile& file, AgentOptions& o);

class Agent {
 public:
  static Result<std::unique_ptr<Agent>> Create(AgentOptions options);
  ~Agent();

  // Registers and serves until RequestStop(); then stops its tasks. Returns an exit code.
  int Run();
  void RequestStop();

  const GpuInventory& inventory() const { return inventory_; }

 private:
  // One node this process serves.
  struct ServedNode {
    std::string name;
    GpuInventory inventory;
    bool registered = false;
    std::map<std::string, std::string> topology;  // its place; empty = AgentOptions::topology
    std::string address;                          // empty = AgentOptions::address
  };
  struct LocalTask {
    std::string node;
    TaskLaunch launch;
    LaunchedTask proc;
    std::set<pid_t> alive;
    ReportedState state = ReportedState::kRunning;
    int exit_code = 0;
    int signal = 0;
    bool failure_recorded = false;
    Tick finished_ms = 0;
    std::string message;
    bool stopping = false;
    Tick kill_at = 0;
    bool killed = false;
    // --simulate-tasks: no process; it ends by itself at simulated_end_ms (kNever: when
    // stopped). Not persisted: there is nothing to recover after a restart.
    bool simulated = false;
    Tick simulated_end_ms = 0;
  };
  // The reports one heartbeat carried, (task, state): acknowledged once it is answered.
  using Included = std::vector<std::pair<std::int64_t, ReportedState>>;
  // Where an emulating agent's delta heartbeats stand with the controller at one URL.
  struct DeltaState {
    std::int64_t since = 0;  // generation of the last reply applied; 0: none (full report next)
    bool want_full = true;
    Tick last_full_ms = 0;
    Tick last_alive_ms = 0;
  };
  // A full report every so often even when nothing asks for one: the level-triggered check
  // that catches whatever a delta could have missed.
  static constexpr Tick kFullReportEveryMs = 300000;
  // Between two batched heartbeats when there is news all the time (thousands of tasks
  // starting and ending): changes wait this long to share one request.
  static constexpr int kBatchedHeartbeatGapMs = 20;

  explicit Agent(AgentOptions options);
  bool Register(ServedNode& node);
  // Emulated nodes: the unregistered ones in batches (POST /v1/agents/register-nodes).
  bool RegisterBatched(const std::string& url);
  bool ApplyRegistration(const std::string& node, const std::string& body);
  HeartbeatRequest BuildRequest(const std::string& node);
  NodesHeartbeatRequest BuildNodesRequest(Included* included = nullptr);
  // Delta form (protocol.h): only reports not yet acknowledged; `renew`: also every other
  // registered node's name, to keep it alive.
  NodesHeartbeatRequest BuildDeltaRequest(const DeltaState& delta, bool renew, Included* included);
  // The controller recorded these reports: they are not sent again while their state holds.
  void Acknowledge(const Included& included);
  void NoteUnackedLocked(std::int64_t id) { unacked_.insert(id); }
  void AddTaskLocked(std::int64_t id, LocalTask t);
  void EraseTaskLocked(std::map<std::int64_t, LocalTask>::iterator it);
  // Applies the controller's answers, node by node; new tasks are launched together.
  void Apply(const std::map<std::string, HeartbeatReply>& replies);
  void LaunchLocked(const std::vector<std::pair<std::string, TaskLaunch>>& launches);
  static constexpr std::size_t kLaunchThreads = 16;
  // Registers, reports and applies the answers until stopped: a single node's own long poll,
  // or one batched poll for all emulated nodes.
  void HeartbeatLoop();
  // The loop talking to `url`, until stopped or another controller is to be talked to.
  void HeartbeatLoopAt(const std::string& url);
  // One exchange of the batched heartbeat (all its parts); false when it failed and the loop
  // should start over.
  bool BatchedExchange(httplib::Client& client, const std::string& url, Tick wait,
                       DeltaState& delta, std::map<std::string, HeartbeatReply>& replies);
  // What to do with a refused or failed answer; false: give up on this exchange.
  bool HandleAnswer(const std::string& url, const httplib::Result& res, bool batched);
  // The controller to talk to; after a request to `url` failed (`res` null) or was refused by
  // a standby naming the leader, the next one. Returns whether `url` is still current.
  std::string Server();
  bool KeepServer(const std::string& url, const httplib::Result& res);
  void LastHeartbeat();
  void Complain(const std::string& msg);  // at most one line per 5 s
  void Pause(int ms);                     // or until RequestStop()
  void StopLocked(LocalTask& t, int grace_seconds, const std::string& why);
  void FenceLocked(LocalTask& t);
  void MonitorLoop();
  bool MonitorLoopAt(const std::string& url);  // false: the controller changed
  using Finished = std::vector<std::pair<std::string, TaskReport>>;  // (node, report)
  void ReapLocked(Finished& finished);
  // Ends the simulated tasks whose time has come (--simulate-tasks).
  void EndSimulatedLocked(Finished& finished);
  void FinishLocked(LocalTask& t, Finished& finished);
  TaskReport ReportOf(const std::int64_t id, const LocalTask& t) const;
  // Adds what a running task wrote to its usage file to `req` (task_usage.h).
  void AddUsageLocked(std::int64_t id, const LocalTask& t, HeartbeatRequest& req);
  void Persist(std::int64_t id, const LocalTask& t) const;
  void Unpersist(std::int64_t id) const;
  void RecoverLeftovers();
  // Failure drill (POST /v1/emulated/NODE/fail on the log endpoint, emulated nodes only): kills
  // the node's tasks and stops its heartbeats for good, as a machine that died. Returns the
  // tasks killed, or -1 for a node this agent does not emulate.
  int FailEmulatedNode(const std::string& node);
  bool IsFailed(const std::string& node);
  void StartLogServer();  // agent_endpoint.cpp
  // `tessera exec` (exec_session.h): the command `body` asks for, in task `task_id`'s
  // environment; then the session's start and its reads and writes.
  Result<ExecCommand> ExecCommandFor(std::int64_t task_id, const nlohmann::json& body);
  void StartExec(const httplib::Request& req, httplib::Response& res);
  void ExecIo(const httplib::Request& req, httplib::Response& res);
  // GET /metrics (agent_metrics.h): the gauges gathered under mu_, formatted without it.
  std::string MetricsText();
  void StopAllTasks();

  AgentOptions options_;
  GpuInventory inventory_;           // of the first node (every emulated node has the same)
  std::unique_ptr<NvmlUsage> nvml_;  // real GPUs with a driver: their measured use
  AgentCredential credential_;
  std::vector<ServedNode> nodes_;
  LaunchSettings settings_;
  TaskCgroups cgroups_;
  MpsSupport mps_;  // CUDA MPS for tasks with a GPU share (agent/task_isolation.h)
  std::string agent_url_;
  Tick heartbeat_interval_ms_ = 1000;
  Tick last_complaint_ = 0;

  std::mutex servers_mu_;
  ControllerUrls servers_;  // under servers_mu_

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::int64_t, LocalTask> tasks_;
  std::map<std::string, std::set<std::int64_t>> node_tasks_;  // tasks_ by node
  std::set<std::int64_t> unacked_;  // tasks whose current report the controller has not had
  std::multimap<Tick, std::int64_t> simulated_ends_;  // when simulated tasks end (may be stale)
  std::set<std::string> failed_nodes_;                // emulated nodes failed by a drill
  bool dirty_ = true;  // something to report now rather than after a long poll
  std::atomic<bool> stop_{false};
  std::thread monitor_;
  std::unique_ptr<httplib::Server> log_server_;
  std::thread log_thread_;
  AgentMetrics metrics_;
  ExecSessions exec_;
  TaskUsageReader usage_reader_{[](const std::string& node, const std::string& msg) {
    std::fprintf(stderr, "tessera-agent[%s]: %s\n", node.c_str(), msg.c_str());
  }};
  std::atomic<Tick> last_heartbeat_ok_ms_{0};  // when a heartbeat was last answered with 200
  // TaskReport::seq of the last report built. Starts at the wall clock in microseconds, so
  // that a restarted agent's reports still order after its predecessor's.
  mutable std::atomic<std::int64_t> report_seq_;
};

}  // namespace tessera
