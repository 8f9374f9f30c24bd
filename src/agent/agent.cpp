#include "agent/agent.h"

#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "agent/heartbeat_batches.h"
#include "agent/simulated_task.h"
#include "spec/document.h"

namespace tessera {

namespace {

using Json = nlohmann::json;

// Field 22 of /proc/<pid>/stat: the start time in clock ticks after boot, or 0.
unsigned long long ProcessStartTime(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i) {
    if (i == 22) return std::strtoull(field.c_str(), nullptr, 10);
  }
  return 0;
}

std::int64_t MachineCpuMilli() {
  return static_cast<std::int64_t>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN))) * 1000;
}

std::int64_t MachineMemoryMib() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<std::int64_t>(pages) * page / (1024 * 1024);
}

void Log(const std::string& node, const std::string& msg) {
  std::fprintf(stderr, "tessera-agent[%s]: %s\n", node.c_str(), msg.c_str());
}

}  // namespace

Agent::Agent(AgentOptions options)
    : options_(std::move(options)),
      report_seq_(std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count()) {}

Agent::~Agent() {
  RequestStop();
  if (monitor_.joinable()) monitor_.join();
  if (log_server_) log_server_->stop();
  if (log_thread_.joinable()) log_thread_.join();
}

Status ApplyTopologyFile(const TopologyFile& file, AgentOptions& o) {
  o.topology = file.topology;
  if (file.nodes.empty()) return {};
  if (o.simulate_nodes == 0) {
    for (const auto& n : file.nodes) {
      if (n.name != o.node) continue;
      if (!n.topology.empty()) o.topology = n.topology;
      return {};
    }
    return InvalidArgument("no entry of nodes names this node (" + o.node + ")");
  }
  const auto listed = static_cast<int>(file.nodes.size());
  if (o.simulate_nodes != listed) {
    return InvalidArgument("--simulate-nodes " + std::to_string(o.simulate_nodes) +
                           ", but the file lists " + std::to_string(listed) + " nodes");
  }
  for (auto& n : file.nodes) {
    TopologyFileNode node = n;
    if (node.topology.empty()) node.topology = file.topology;
    o.emulated.push_back(std::move(node));
  }
  return {};
}

Result<std::unique_ptr<Agent>> Agent::Create(AgentOptions options) {
  if (options.state_dir.empty()) return InvalidArgument("--state: required");
  const std::string& host = options.listen_host;
  const bool loopback = host == "localhost" || host == "::1" || host.starts_with("127.");
  if (!options.endpoint_tls.enabled() && !loopback) {
    return InvalidArgument("--listen " + host +
                           ": the endpoint serves task logs and exec, plain HTTP on 127.0.0.1 "
                           "only; give --tls-cert-file, --tls-private-key-file and "
                           "--client-ca-file (the CA of the controller's client certificate)");
  }
  std::error_code ec;
  std::filesystem::create_directories(options.state_dir, ec);
  if (ec) return IoError("--state " + options.state_dir + ": " + ec.message());
  options.state_dir = std::filesystem::canonical(options.state_dir, ec).string();
  if (ec) return IoError("--state: " + ec.message());
  for (const char* sub : {"/logs", "/tasks", "/work", "/usage"}) {
    std::filesystem::create_directories(options.state_dir + sub, ec);
    if (ec) return IoError("cannot create " + options.state_dir + sub + ": " + ec.message());
  }
  // Tasks run as other users write their usage files here too (a sticky directory, as /tmp).
  std::filesystem::permissions(options.state_dir + "/usage",
                               std::filesystem::perms::all | std::filesystem::perms::sticky_bit,
                               ec);
  auto servers = ControllerUrls::Parse(options.server_url);
  if (!servers) return std::unexpected(servers.error());
  std::unique_ptr<Agent> agent(new Agent(std::move(options)));
  AgentOptions& o = agent->options_;
  agent->servers_ = std::move(*servers);
  if (auto s = agent->credential_.Load(o.state_dir, o.bootstrap_token_file, o.ca_file); !s)
    return std::unexpected(s.error());
  if (o.simulate_nodes < 0 || o.simulate_nodes > 100000) {
    return InvalidArgument("--simulate-nodes: must be 0..100000, got " +
                           std::to_string(o.simulate_nodes));
  }
  if (o.simulate_nodes > 0 && !o.simulate_gpus) o.simulate_gpus = "8xH100";
  if (o.simulate_tasks && !o.simulate_gpus) {
    return InvalidArgument(
        "--simulate-tasks: needs simulated GPUs (--simulate-gpus or --simulate-nodes)");
  }
  if (o.simulate_gpus) {
    auto inv = SimulatedGpus(*o.simulate_gpus, o.node);
    if (!inv) return std::unexpected(inv.error());
    agent->inventory_ = std::move(*inv);
  } else if (auto inv = NvmlGpus()) {
    agent->inventory_ = std::move(*inv);
    std::string why;
    agent->nvml_ = NvmlUsage::Open(&why);
    if (!agent->nvml_) Log(o.node, "GPU usage: " + why + "; tasks' usage files only");
  } else {
    agent->inventory_.source = "none (" + inv.error().message + "; use --simulate-gpus 8xH100)";
  }
  if (o.simulate_nodes == 0) {
    agent->nodes_.push_back({o.node, agent->inventory_, false, {}, {}});
  } else if (!o.emulated.empty()) {
    for (const auto& n : o.emulated) {
      auto inv = SimulatedGpus(n.gpus.empty() ? *o.simulate_gpus : n.gpus, n.name);
      if (!inv) return std::unexpected(inv.error());
      agent->nodes_.push_back({n.name, std::move(*inv), false, n.topology, {}});
    }
  } else {
    for (int i = 0; i < o.simulate_nodes; ++i) {
      char suffix[16];
      std::snprintf(suffix, sizeof suffix, "-%04d", i);
      const std::string name = o.node + suffix;
      auto inv = SimulatedGpus(*o.simulate_gpus, name);
      if (!inv) return std::unexpected(inv.error());
      agent->nodes_.push_back({name, std::move(*inv), false, {}, {}});
    }
  }
  if (o.simulate_tasks && o.simulate_nodes > 0 && o.address == "127.0.0.1") {
    // No process listens anywhere, so each emulated node may advertise an address of its own
    // in 127/8, as KWOK's fake nodes have IPs of their own: rendezvous ports (MASTER_PORT) are
    // then chosen per node as in a real cluster, not among 100,000 tasks of one address.
    for (std::size_t i = 0; i < agent->nodes_.size(); ++i) {
      agent->nodes_[i].address = "127." + std::to_string(1 + i / 65536) + "." +
                                 std::to_string(i / 256 % 256) + "." + std::to_string(i % 256);
    }
  }
  if (o.run_as) {
    auto user = ResolveRunAs(*o.run_as);
    if (!user) return std::unexpected(user.error());
    agent->settings_.run_as = *user;
  }
  if (o.cgroups) agent->cgroups_ = TaskCgroups::Detect(o.node);
  agent->settings_.state_dir = o.state_dir;
  agent->settings_.node = o.node;
  agent->settings_.simulated_gpus = agent->inventory_.simulated;
  agent->settings_.cgroups = agent->cgroups_.enabled() ? &agent->cgroups_ : nullptr;
  agent->settings_.no_cgroups = o.cgroups ? agent->cgroups_.reason() : "turned off (--no-cgroups)";
  const char* pipe = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  agent->mps_ = DetectMps(agent->inventory_.simulated, pipe != nullptr ? pipe : "/tmp/nvidia-mps");
  agent->settings_.mps = &agent->mps_;
  if (o.cpu_milli <= 0) o.cpu_milli = MachineCpuMilli();
  if (o.memory_mib <= 0) o.memory_mib = MachineMemoryMib();
  return agent;
}

void Agent::RequestStop() {
  stop_ = true;
  cv_.notify_all();
}

// --- Task records on disk ---

void Agent::Persist(std::int64_t id, const LocalTask& t) const {
  Json j = {{"node", t.node},
            {"launch", ToJson(t.launch)},
            {"pgid", t.proc.pgid},
            {"pids", t.proc.pids},
            {"leaderStart", t.proc.pgid > 0 ? ProcessStartTime(t.proc.pgid) : 0},
            {"startedMs", t.proc.started_ms},
            {"cgroup", t.proc.cgroup},
            {"isolation", t.proc.isolation},
            {"report", ToJson(ReportOf(id, t))}};
  const std::string path = options_.state_dir + "/tasks/" + std::to_string(id) + ".json";
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << DumpJson(j) << "\n";
  }
  std::rename(tmp.c_str(), path.c_str());
}

void Agent::Unpersist(std::int64_t id) const {
  std::remove((options_.state_dir + "/tasks/" + std::to_string(id) + ".json").c_str());
}

void Agent::RecoverLeftovers() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(options_.state_dir + "/tasks", ec)) {
    const std::string path = entry.path().string();
    if (entry.path().extension() != ".json") {
      std::remove(path.c_str());
      continue;
    }
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    auto doc = ParseJson(ss.str());
    if (!doc || !doc->is_object() || !doc->contains("launch") || !doc->contains("report")) {
      std::remove(path.c_str());
      continue;
    }
    auto launch = TaskLaunchFromJson((*doc)["launch"]);
    auto report = TaskReportFromJson((*doc)["report"]);
    if (!launch || !report) {
      std::remove(path.c_str());
      continue;
    }
    LocalTask t;
    t.launch = *launch;
    unsigned long long recorded = 0;
    try {
      t.node = doc->value("node", options_.node);
      t.proc.pgid = doc->value("pgid", 0);
      t.proc.started_ms = doc->value("startedMs", Tick{0});
      t.proc.cgroup = doc->value("cgroup", std::string());
      t.proc.isolation = doc->value("isolation", std::string());
      recorded = doc->value("leaderStart", 0ULL);
    } catch (const std::exception&) {
      std::remove(path.c_str());
      continue;
    }
    t.state = report->state;
    t.exit_code = report->exit_code;
    t.signal = report->signal;
    t.finished_ms = report->finished_ms;
    t.message = report->message;
    if (t.state == ReportedState::kRunning) {
      // We cannot wait for processes we did not start: end them and report the task lost.
      const pid_t pgid = t.proc.pgid;
      const bool leader_alive = pgid > 0 && ::kill(pgid, 0) == 0;
      if (pgid > 0 && (!leader_alive || ProcessStartTime(pgid) == recorded)) {
        ::kill(-pgid, SIGKILL);
      }
      cgroups_.Kill(t.proc.cgroup);
      cgroups_.Remove(t.proc.cgroup);
      t.state = ReportedState::kLost;
      t.exit_code = 137;
      t.signal = SIGKILL;
      t.finished_ms = NowMs();
      t.message = "the agent restarted; the task's processes were ended";
      Log(t.node, "task " + std::to_string(t.launch.task_id) + ": " + t.message);
    }
    const auto id = t.launch.task_id;
    Persist(id, t);
    AddTaskLocked(id, std::move(t));
  }
}

// --- Reporting ---

TaskReport Agent::ReportOf(const std::int64_t id, const LocalTask& t) const {
  TaskReport r;
  r.task_id = id;
  r.state = t.state;
  r.pid = t.proc.pgid;
  r.exit_code = t.exit_code;
  r.signal = t.signal;
  r.started_ms = t.proc.started_ms;
  r.finished_ms = t.finished_ms;
  r.message = t.message;
  r.isolation = t.proc.isolation;
  r.seq = ++report_seq_;  // the builders of reports hold mu_: numbered in the order observed
  return r;
}

void Agent::AddUsageLocked(std::int64_t id, const LocalTask& t, HeartbeatRequest& req) {
  if (t.state != ReportedState::kRunning || t.alive.empty()) return;
  std::int64_t memory_bytes = 0;
  if (!t.launch.gpus.empty() && !inventory_.gpus.empty()) {
    const auto g = static_cast<std::size_t>(t.launch.gpus[0]);
    if (g < inventory_.gpus.size()) memory_bytes = inventory_.gpus[g].memory_mib * 1048576;
  }
  usage_reader_.Read(id, t.node, TaskUsagePath(options_.state_dir, id), t.launch.gpus, memory_bytes,
                     req.usage);
}

HeartbeatRequest Agent::BuildRequest(const std::string& node) {
  std::lock_guard lock(mu_);
  HeartbeatRequest req;
  for (const auto& [id, t] : tasks_) {
    if (t.node != node) continue;
    req.tasks.push_back(ReportOf(id, t));
    AddUsageLocked(id, t, req);
  }
  if (nvml_) {
    for (GpuUsageReport& r : nvml_->Read()) req.usage.push_back(r);
  }
  return req;
}

bool Agent::IsFailed(const std::string& node) {
  std::lock_guard lock(mu_);
  return failed_nodes_.contains(node);
}

int Agent::FailEmulatedNode(const std::string& node) {
  if (options_.simulate_nodes == 0) return -1;
  if (std::none_of(nodes_.begin(), nodes_.end(),
                   [&](const ServedNode& n) { return n.name == node; }))
    return -1;
  std::lock_guard lock(mu_);
  failed_nodes_.insert(node);
  int killed = 0;
  for (auto it = tasks_.begin(); it != tasks_.end();) {
    if (it->second.node != node) {
      ++it;
      continue;
    }
    if (it->second.proc.pgid > 0) ::kill(-it->second.proc.pgid, SIGKILL);
    cgroups_.Kill(it->second.proc.cgroup);
    Unpersist(it->first);
    auto next = std::next(it);
    EraseTaskLocked(it);  // never reported again: the controller finds the node lost
    it = next;
    ++killed;
  }
  Log(node, "failed on request (failure drill): " + std::to_string(killed) +
                " task(s) killed, heartbeats stopped");
  return killed;
}

NodesHeartbeatRequest Agent::BuildNodesRequest(Included* included) {
  std::lock_guard lock(mu_);
  NodesHeartbeatRequest req;
  for (const auto& n : nodes_) {
    if (n.registered && !failed_nodes_.contains(n.name)) req.nodes[n.name];
  }
  for (const auto& [id, t] : tasks_) {
    if (auto it = req.nodes.find(t.node); it != req.nodes.end()) {
      it->second.tasks.push_back(ReportOf(id, t));
      AddUsageLocked(id, t, it->second);
      if (included != nullptr) included->emplace_back(id, t.state);
    }
  }
  return req;
}

NodesHeartbeatRequest Agent::BuildDeltaRequest(const DeltaState& delta, bool renew,
                                               Included* included) {
  std::lock_guard lock(mu_);
  NodesHeartbeatRequest req;
  req.delta = true;
  req.since = delta.since;
  req.agent_url = agent_url_;
  for (auto id : unacked_) {
    auto it = tasks_.find(id);
    if (it == tasks_.end() || failed_nodes_.contains(it->second.node)) continue;
    HeartbeatRequest& hb = req.nodes[it->second.node];
    hb.tasks.push_back(ReportOf(id, it->second));
    included->emplace_back(id, it->second.state);
  }
  if (renew) {
    for (const auto& n : nodes_) {
      if (!n.registered || failed_nodes_.contains(n.name)) continue;
      auto it = node_tasks_.find(n.name);
      // Running tasks' usage goes with the renewal, about once an interval.
      if (it != node_tasks_.end()) {
        HeartbeatRequest usage;
        for (auto id : it->second) AddUsageLocked(id, tasks_.at(id), usage);
        if (!usage.usage.empty()) {
          auto& hb = req.nodes[n.name].usage;
          hb.insert(hb.end(), usage.usage.begin(), usage.usage.end());
        }
      }
      if (!req.nodes.contains(n.name)) req.alive.push_back(n.name);
    }
  }
  return req;
}

void Agent::Acknowledge(const Included& included) {
  std::lock_guard lock(mu_);
  for (const auto& [id, state] : included) {
    auto it = tasks_.find(id);
    // A finished task stays unacknowledged until the controller says to forget it.
    if (it != tasks_.end() && it->second.state == state && state == ReportedState::kRunning)
      unacked_.erase(id);
  }
}

void Agent::AddTaskLocked(std::int64_t id, LocalTask t) {
  node_tasks_[t.node].insert(id);
  if (t.simulated && t.state == ReportedState::kRunning)
    simulated_ends_.emplace(t.simulated_end_ms, id);
  tasks_.insert_or_assign(id, std::move(t));
  unacked_.insert(id);
}

void Agent::EraseTaskLocked(std::map<std::int64_t, LocalTask>::iterator it) {
  if (auto n = node_tasks_.find(it->second.node); n != node_tasks_.end()) {
    n->second.erase(it->first);
    if (n->second.empty()) node_tasks_.erase(n);
  }
  unacked_.erase(it->first);
  tasks_.erase(it);
}

std::string Agent::Server() {
  std::lock_guard lock(servers_mu_);
  return servers_.current();
}

bool Agent::KeepServer(const std::string& url, const httplib::Result& res) {
  std::lock_guard lock(servers_mu_);
  if (servers_.current() != url) return false;  // another thread moved on already
  if (res) {
    auto leader = StandbyLeader(res->status, res->body);
    if (!leader) return true;
    if (!leader->empty() && *leader != url) {
      servers_.Follow(*leader);
      return false;
    }
  }
  if (servers_.size() == 1) return true;
  servers_.Next();
  return false;
}

namespace {

NodeRegistration RegistrationOf(const std::string& name, const GpuInventory& inventory,
                                const std::map<std::string, std::string>& topology,
                                const std::string& address, const AgentOptions& o,
                                const std::string& agent_url) {
  NodeRegistration reg;
  reg.node = name;
  reg.address = address.empty() ? o.address : address;
  reg.agent_url = agent_url;
  reg.simulated = inventory.simulated;
  reg.gpus = inventory.gpus;
  reg.cpu_milli = o.cpu_milli;
  reg.memory_mib = o.memory_mib;
  reg.version = "0.1.0";
  reg.topology = topology.empty() ? o.topology : topology;
  return reg;
}

}  // namespace

bool Agent::Register(ServedNode& node) {
  const NodeRegistration reg =
      RegistrationOf(node.name, node.inventory, node.topology, node.address, options_, agent_url_);
  const std::string server = Server();
  httplib::Client client(server);
  client.set_tcp_nodelay(true);
  client.set_connection_timeout(2, 0);
  client.set_read_timeout(10, 0);
  credential_.ApplyForRegistration(client);
  auto res = client.Post("/v1/agents/register", DumpJson(ToJson(reg)), "application/json");
  if (!KeepServer(server, res)) return false;
  if (!res) {
    Complain("registration with " + server + " failed (" + httplib::to_string(res.error()) + ")");
    return false;
  }
  if (res->status != 200) {
    Log(node.name, "registration refused (" + std::to_string(res->status) + "): " + res->body);
    return false;
  }
  if (!ApplyRegistration(node.name, res->body)) return false;
  node.registered = true;
  // One line per agent process, not one per emulated node.
  if (&node == &nodes_.front()) {
    Log(node.name,
        "registered with " + server + ": " + std::to_string(node.inventory.gpus.size()) +
            " GPU(s), " + node.inventory.source +
            (cgroups_.enabled() ? ", cgroups on" : ", cgroups off (" + cgroups_.reason() + ")"));
  }
  return true;
}

bool Agent::ApplyRegistration(const std::string& node, const std::string& body) {
  auto doc = ParseJson(body);
  if (!doc) return true;
  if (auto reply = RegistrationReplyFromJson(*doc)) {
    heartbeat_interval_ms_ = std::clamp<Tick>(reply->heartbeat_interval_ms, 50, 60000);
  }
  // A first registration is issued the node's own credential; later calls present it.
  if (doc->is_object() && (*doc)["nodeCredential"].is_string()) {
    if (auto s = credential_.Keep((*doc)["nodeCredential"].get<std::string>()); !s) {
      Log(node, s.error().message);
      return false;
    }
  }
  return true;
}

bool Agent::RegisterBatched(const std::string& url) {
  std::vector<ServedNode*> todo;
  for (auto& n : nodes_) {
    if (!n.registered && !IsFailed(n.name)) todo.push_back(&n);
  }
  if (todo.empty()) return true;
  httplib::Client client(url);
  client.set_tcp_nodelay(true);
  client.set_connection_timeout(2, 0);
  client.set_read_timeout(30, 0);
  client.set_keep_alive(true);
  const std::size_t before = todo.size();
  for (std::size_t first = 0; first < todo.size() && !stop_; first += kMaxNodesPerRegistration) {
    const std::size_t end = std::min(todo.size(), first + kMaxNodesPerRegistration);
    NodesRegistration batch;
    for (std::size_t i = first; i < end; ++i) {
      batch.nodes.push_back(RegistrationOf(todo[i]->name, todo[i]->inventory, todo[i]->topology,
                                           todo[i]->address, options_, agent_url_));
    }
    // The first batch may be issued the credential the later ones present.
    credential_.ApplyForRegistration(client);
    auto res =
        client.Post("/v1/agents/register-nodes", DumpJson(ToJson(batch)), "application/json");
    if (!KeepServer(url, res)) return false;
    if (!res) {
      Complain("registration with " + url + " failed (" + httplib::to_string(res.error()) + ")");
      return false;
    }
    if (res->status != 200) {
      Log(todo[first]->name, "registration of " + std::to_string(end - first) + " nodes refused (" +
                                 std::to_string(res->status) + "): " + res->body);
      return false;
    }
    if (!ApplyRegistration(todo[first]->name, res->body)) return false;
    for (std::size_t i = first; i < end; ++i) todo[i]->registered = true;
  }
  if (stop_) return false;
  Log(options_.node, "registered " + std::to_string(before) + " emulated nodes with " + url +
                         " in batches of up to " + std::to_string(kMaxNodesPerRegistration) + ": " +
                         std::to_string(nodes_.front().inventory.gpus.size()) + " GPU(s) each, " +
                         nodes_.front().inventory.source);
  return true;
}

// --- Launching and stopping ---

void Agent::LaunchLocked(const std::vector<std::pair<std::string, TaskLaunch>>& launches) {
  // Defence in depth, in order: never start a task on a GPU a running task (or one started
  // earlier in this batch) already fills. An oversold task (co-location) holds a share the
  // controller lent it from online replicas' unused GPU: it is neither counted nor checked.
  std::map<std::pair<std::string, int>, std::int32_t> used;
  std::set<std::string> launch_nodes;
  for (const auto& [node, launch] : launches) launch_nodes.insert(node);
  for (const auto& node : launch_nodes) {
    auto on = node_tasks_.find(node);
    if (on == node_tasks_.end()) continue;
    for (auto id : on->second) {
      const LocalTask& other = tasks_.at(id);
      if (other.state != ReportedState::kRunning || other.launch.oversold) continue;
      for (int g : other.launch.gpus) used[{other.node, g}] += other.launch.gpu_milli;
    }
  }
  std::map<std::string, const GpuInventory*> inventories;
  for (const auto& n : nodes_) inventories[n.name] = &n.inventory;
  std::vector<std::string> conflicts(launches.size());
  for (std::size_t i = 0; i < launches.size(); ++i) {
    const auto& [node, launch] = launches[i];
    auto inv = inventories.find(node);
    const std::size_t gpus = inv == inventories.end() ? 0 : inv->second->gpus.size();
    for (int g : launch.gpus) {
      if (g < 0 || static_cast<std::size_t>(g) >= gpus) {
        conflicts[i] = "GPU " + std::to_string(g) + " does not exist on node " + node;
      } else if (!launch.oversold && used[{node, g}] + launch.gpu_milli > 1000) {
        conflicts[i] = "GPU " + std::to_string(g) + " is already in use by another task";
      }
    }
    if (conflicts[i].empty() && !launch.oversold) {
      for (int g : launch.gpus) used[{node, g}] += launch.gpu_milli;
    }
  }
  // fork/exec in parallel: each launch waits until its exec has succeeded, and on a loaded
  // machine that wait (the child being scheduled) dominates, so a serial loop paid it once per
  // task (1,000 tasks: about 25 s on a busy 2-core VM). The lock stays held, so the monitor
  // cannot reap a child before its task is recorded.
  std::vector<std::optional<Result<LaunchedTask>>> results(launches.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < launches.size(); i = next++) {
      if (!conflicts[i].empty()) {
        results[i] = Result<LaunchedTask>(FailedPrecondition(conflicts[i]));
        continue;
      }
      if (options_.simulate_tasks) {
        results[i] = LaunchedTask{0, {}, NowMs(), "", ""};  // a simulated task: no process
        continue;
      }
      LaunchSettings settings = settings_;
      settings.node = launches[i].first;
      if (auto inv = inventories.find(settings.node);
          inv != inventories.end() && !inv->second->gpus.empty())
        settings.gpu_memory_mib = inv->second->gpus[0].memory_mib;
      results[i] = LaunchTask(launches[i].second, settings);
    }
  };
  const std::size_t threads = std::min<std::size_t>(kLaunchThreads, launches.size());
  std::vector<std::thread> pool;
  for (std::size_t k = 1; k < threads; ++k) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();

  for (std::size_t i = 0; i < launches.size(); ++i) {
    const auto& [node, launch] = launches[i];
    LocalTask t;
    t.node = node;
    t.launch = launch;
    auto& launched = *results[i];
    if (!launched) {
      t.state = ReportedState::kFailedToStart;
      t.exit_code = 127;
      t.message = launched.error().message;
      t.finished_ms = NowMs();
      t.proc.started_ms = t.finished_ms;
      Log(node, "task " + std::to_string(launch.task_id) + " failed to start: " + t.message);
    } else if (options_.simulate_tasks) {
      t.proc = std::move(*launched);
      t.simulated = true;
      const std::optional<Tick> run = SimulatedRunMs(launch);
      t.simulated_end_ms = run ? t.proc.started_ms + *run : kNever;
    } else {
      t.proc = std::move(*launched);
      t.alive.insert(t.proc.pids.begin(), t.proc.pids.end());
    }
    if (!t.simulated) Persist(launch.task_id, t);
    AddTaskLocked(launch.task_id, std::move(t));
  }
  if (!launches.empty()) dirty_ = true;
}

void Agent::StopLocked(LocalTask& t, int grace_seconds, const std::string& why) {
  if (t.state != ReportedState::kRunning || t.stopping) return;
  t.stopping = true;
  t.message = why;
  t.kill_at = NowMs() + static_cast<Tick>(std::max(0, grace_seconds)) * 1000;
  if (t.proc.pgid > 0) ::kill(-t.proc.pgid, SIGTERM);
  if (t.simulated) {  // ends at once, as SIGTERM ends `sleep`
    t.simulated_end_ms = NowMs();
    t.exit_code = 128 + SIGTERM;
    t.signal = SIGTERM;
    simulated_ends_.emplace(t.simulated_end_ms, t.launch.task_id);
  }
}

// The controller replaced this task's attempt while it could not hear from us: the old copy
// of the rank must not run beside the new one, so SIGKILL now, not SIGTERM and a grace period.
void Agent::FenceLocked(LocalTask& t) {
  if (t.state != ReportedState::kRunning || t.killed) return;
  if (!t.stopping)
    Log(t.node, "task " + std::to_string(t.launch.task_id) + " (attempt " +
                    std::to_string(t.launch.attempt) +
                    ") was replaced while this node was lost; killing it");
  t.stopping = true;
  t.killed = true;
  t.message = "fenced: its attempt was replaced while the node was lost";
  if (t.proc.pgid > 0) ::kill(-t.proc.pgid, SIGKILL);
  cgroups_.Kill(t.proc.cgroup);
  if (t.simulated) {
    t.simulated_end_ms = NowMs();
    t.exit_code = 128 + SIGKILL;
    t.signal = SIGKILL;
    simulated_ends_.emplace(t.simulated_end_ms, t.launch.task_id);
  }
}

void Agent::Apply(const std::map<std::string, HeartbeatReply>& replies) {
  std::lock_guard lock(mu_);
  std::vector<std::pair<std::string, TaskLaunch>> launches;
  std::set<std::int64_t> seen;
  for (const auto& [node, reply] : replies) {
    if (failed_nodes_.contains(node)) continue;
    for (const auto& launch : reply.run) {
      if (tasks_.contains(launch.task_id) || !seen.insert(launch.task_id).second) continue;
      launches.emplace_back(node, launch);
    }
  }
  if (!stop_) LaunchLocked(launches);
  for (const auto& [node, reply] : replies) {
    for (const auto& s : reply.stop) {
      auto it = tasks_.find(s.task_id);
      if (it == tasks_.end() && options_.simulate_nodes > 0) {
        // A delta's stop of a task this node never got (stopped before its launch reached
        // us): report it stopped, so that the controller does not wait for it.
        LocalTask never;
        never.node = node;
        never.launch.task_id = s.task_id;
        never.state = ReportedState::kStopped;
        never.exit_code = 128 + SIGTERM;
        never.finished_ms = NowMs();
        never.message = "stopped before it started on this node";
        AddTaskLocked(s.task_id, std::move(never));
        dirty_ = true;
        continue;
      }
      if (it == tasks_.end() || it->second.node != node) continue;
      if (s.fence) {
        FenceLocked(it->second);
      } else {
        StopLocked(it->second, s.grace_period_seconds, "stopped by the controller");
      }
    }
    for (auto id : reply.forget) {
      auto it = tasks_.find(id);
      if (it == tasks_.end() || it->second.node != node ||
          it->second.state == ReportedState::kRunning)
        continue;
      EraseTaskLocked(it);
      Unpersist(id);
      usage_reader_.Forget(id);
      std::error_code ec;
      std::filesystem::remove(TaskUsagePath(options_.state_dir, id), ec);
    }
  }
}

// --- Supervision ---

void Agent::FinishLocked(LocalTask& t, Finished& finished) {
  t.state = t.stopping ? ReportedState::kStopped : ReportedState::kExited;
  t.finished_ms = NowMs();
  // Whatever the task's processes left behind in their group or cgroup goes too.
  if (t.proc.pgid > 0) ::kill(-t.proc.pgid, SIGKILL);
  cgroups_.Kill(t.proc.cgroup);
  cgroups_.Remove(t.proc.cgroup);
  exec_.EndTask(t.launch.task_id);  // commands run in a task end with it
  if (!t.simulated) Persist(t.launch.task_id, t);
  finished.emplace_back(t.node, ReportOf(t.launch.task_id, t));
  NoteUnackedLocked(t.launch.task_id);
  dirty_ = true;
}

void Agent::ReapLocked(Finished& finished) {
  int status = 0;
  pid_t pid;
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
    bool of_task = false;
    for (auto& [id, t] : tasks_) {
      if (!t.alive.contains(pid)) continue;
      of_task = true;
      t.alive.erase(pid);
      const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + sig;
      if (!t.failure_recorded && (code != 0 || t.alive.empty())) {
        t.exit_code = code;
        t.signal = sig;
        t.failure_recorded = code != 0;
      }
      if (code != 0 && !t.alive.empty() && !t.stopping) {
        // One process of a multi-process worker failed: end its siblings, as torchrun does.
        t.kill_at = NowMs() + static_cast<Tick>(t.launch.grace_period_seconds) * 1000;
        if (t.proc.pgid > 0) ::kill(-t.proc.pgid, SIGTERM);
      }
      if (t.alive.empty()) FinishLocked(t, finished);
      break;
    }
    if (!of_task) exec_.Reaped(pid, status);  // a `tessera exec` command, or an orphan
  }
  if (options_.simulate_tasks) return;  // no processes to kill
  const Tick now = NowMs();
  for (auto& [id, t] : tasks_) {
    if (t.state == ReportedState::kRunning && !t.alive.empty() && t.kill_at > 0 && !t.killed &&
        now >= t.kill_at) {
      t.killed = true;
      if (t.proc.pgid > 0) ::kill(-t.proc.pgid, SIGKILL);
      cgroups_.Kill(t.proc.cgroup);
    }
  }
}

void Agent::EndSimulatedLocked(Finished& finished) {
  const Tick now = NowMs();
  // In order of their ends, not a pass over every task: at 100,000 tasks the pass every 20 ms
  // was most of the agent's CPU. An entry is stale when its task ended or moved its end.
  while (!simulated_ends_.empty() && simulated_ends_.begin()->first <= now) {
    const auto [end, id] = *simulated_ends_.begin();
    simulated_ends_.erase(simulated_ends_.begin());
    auto it = tasks_.find(id);
    if (it == tasks_.end()) continue;
    LocalTask& t = it->second;
    if (t.simulated && t.state == ReportedState::kRunning && now >= t.simulated_end_ms)
      FinishLocked(t, finished);
  }
}

void Agent::MonitorLoop() {
  while (!MonitorLoopAt(Server())) {
  }
}

bool Agent::MonitorLoopAt(const std::string& url) {
  httplib::Client client(url);
  client.set_tcp_nodelay(true);
  client.set_connection_timeout(1, 0);
  client.set_read_timeout(5, 0);
  while (Server() == url) {
    credential_.Apply(client);  // issued after this thread started
    Finished finished;
    exec_.Expire();
    {
      std::unique_lock lock(mu_);
      ReapLocked(finished);
      if (options_.simulate_tasks) EndSimulatedLocked(finished);
      if (stop_ && finished.empty()) {
        bool any_alive = false;
        for (const auto& [id, t] : tasks_) any_alive |= !t.alive.empty();
        if (!any_alive) return true;
      }
    }
    // Report exits at once; the next heartbeat repeats them until they are acknowledged.
    if (options_.simulate_nodes > 0 && !finished.empty()) {
      // Many exits at once (a burst ending): one request, one commit.
      NodesHeartbeatRequest batch;
      for (const auto& [node, r] : finished) batch.nodes[node].tasks.push_back(r);
      client.Post("/v1/agents/status", DumpJson(ToJson(batch)), "application/json");
      finished.clear();
    }
    for (const auto& [node, r] : finished) {
      const std::string path =
          "/v1/agents/" + node + "/tasks/" + std::to_string(r.task_id) + "/status";
      client.Post(path.c_str(), DumpJson(ToJson(r)), "application/json");
    }
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(20));
  }
  return false;
}

void Agent::StopAllTasks() {
  std::unique_lock lock(mu_);
  for (auto& [id, t] : tasks_) {
    StopLocked(t, std::min(t.launch.grace_period_seconds, options_.exit_grace_seconds),
               "the agent is shutting down");
  }
}

// --- Main loop ---

void Agent::Complain(const std::string& msg) {
  const Tick now = NowMs();
  if (now - last_complaint_ > 5000) {
    Log(options_.node, msg);
    last_complaint_ = now;
  }
}

void Agent::Pause(int ms) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return stop_.load(); });
}

// One loop for a single node (its own long poll, `/v1/agents/NODE/heartbeat`) and for emulated
// nodes (one batched poll for all, `/v1/agents/heartbeat`): register what is not registered,
// report, wait for news at most one interval (none when there is something to report), apply.
void Agent::HeartbeatLoop() {
  while (!stop_) HeartbeatLoopAt(Server());
}

void Agent::HeartbeatLoopAt(const std::string& url) {
  httplib::Client client(url);
  client.set_tcp_nodelay(true);
  client.set_connection_timeout(2, 0);
  client.set_keep_alive(true);
  const bool batched = options_.simulate_nodes > 0;
  DeltaState delta;  // per controller: its generations mean nothing to another one
  Tick last_exchange = 0;
  while (!stop_ && Server() == url) {
    bool all_registered = true;
    if (batched) {
      all_registered = RegisterBatched(url);
    } else if (!nodes_.front().registered && !Register(nodes_.front())) {
      all_registered = false;
    }
    if (!all_registered) {
      Complain("controller at " + url +
               " unreachable or refusing registration; retrying (tasks keep running)");
      Pause(500);
      continue;
    }
    Tick wait = 0;
    {
      std::lock_guard lock(mu_);
      wait = dirty_ ? 0 : heartbeat_interval_ms_;
      dirty_ = false;
    }
    if (batched && wait == 0) {
      const Tick since_last = NowMs() - last_exchange;
      if (since_last < kBatchedHeartbeatGapMs)
        Pause(static_cast<int>(kBatchedHeartbeatGapMs - since_last));
    }
    std::map<std::string, HeartbeatReply> replies;
    bool ok = false;
    if (batched) {
      ok = BatchedExchange(client, url, wait, delta, replies);
    } else {
      const std::string& single = nodes_.front().name;
      const std::string path = "/v1/agents/" + single + "/heartbeat?waitMs=" + std::to_string(wait);
      client.set_read_timeout(static_cast<time_t>(wait / 1000 + 10), 0);
      const Tick sent = NowMs();
      credential_.Apply(client);
      auto res =
          client.Post(path.c_str(), DumpJson(ToJson(BuildRequest(single))), "application/json");
      metrics_.Heartbeat(static_cast<double>(NowMs() - sent) / 1000.0, res && res->status == 200);
      if (HandleAnswer(url, res, false)) {
        auto doc = ParseJson(res->body);
        auto reply = doc ? HeartbeatReplyFromJson(*doc)
                         : Result<HeartbeatReply>(std::unexpected(doc.error()));
        if (reply) {
          replies.emplace(single, std::move(*reply));
          ok = true;
        } else {
          Complain("bad heartbeat reply: " + reply.error().message);
        }
      }
    }
    last_exchange = NowMs();
    if (ok) Apply(replies);
  }
}

bool Agent::HandleAnswer(const std::string& url, const httplib::Result& res, bool batched) {
  auto retry_later = [this](const std::string& why) {
    Complain(why);
    {
      std::lock_guard lock(mu_);
      dirty_ = true;  // report everything again once through
    }
    Pause(500);
  };
  if (res && res->status == 200) last_heartbeat_ok_ms_ = NowMs();
  if (!KeepServer(url, res)) {
    Complain("heartbeat to " + url + " failed or was refused by a standby; trying " + Server());
    {
      std::lock_guard lock(mu_);
      dirty_ = true;  // report everything to the next one at once
    }
    Pause(100);
    return false;
  }
  if (!res) {
    retry_later("heartbeat failed (" + httplib::to_string(res.error()) +
                "); retrying, tasks keep running");
    return false;
  }
  if (!batched && res->status == 404) {
    nodes_.front().registered = false;  // the controller lost it (e.g. a fresh store)
    return false;
  }
  if (res->status == 401 && !credential_.has_credential()) {
    for (auto& node : nodes_) node.registered = false;  // authentication came on: register
    retry_later("heartbeat refused (401): registering again with the bootstrap token");
    return false;
  }
  if (res->status != 200) {
    retry_later("heartbeat refused (" + std::to_string(res->status) + "): " + res->body);
    return false;
  }
  return true;
}

// Emulated nodes: one batched request, in parts that fit the controller's body limit
// (heartbeat_batches.h); all but the last part are answered at once, the last long-polls. The
// full form when the controller asked for it (or has never answered), else the delta form.
bool Agent::BatchedExchange(httplib::Client& client, const std::string& url, Tick wait,
                            DeltaState& delta, std::map<std::string, HeartbeatReply>& replies) {
  const Tick now = NowMs();
  const bool full =
      delta.want_full || delta.since == 0 || now - delta.last_full_ms >= kFullReportEveryMs;
  const bool renew = full || now - delta.last_alive_ms >= heartbeat_interval_ms_ / 2;
  Included included;
  NodesHeartbeatRequest request =
      full ? BuildNodesRequest(&included) : BuildDeltaRequest(delta, renew, &included);
  std::vector<std::string> bodies;
  for (const auto& part : SplitNodesHeartbeat(std::move(request)))
    bodies.push_back(DumpJson(ToJson(part)));
  std::int64_t generation = 0;
  bool want_full = false;
  for (std::size_t part = 0; part < bodies.size(); ++part) {
    const Tick part_wait = part + 1 == bodies.size() ? wait : 0;
    const std::string path = "/v1/agents/heartbeat?waitMs=" + std::to_string(part_wait);
    client.set_read_timeout(static_cast<time_t>(part_wait / 1000 + 10), 0);
    const Tick sent = NowMs();
    credential_.Apply(client);
    auto res = client.Post(path.c_str(), bodies[part], "application/json");
    metrics_.Heartbeat(static_cast<double>(NowMs() - sent) / 1000.0, res && res->status == 200);
    if (!HandleAnswer(url, res, true)) return false;
    auto doc = ParseJson(res->body);
    auto reply = doc ? NodesHeartbeatReplyFromJson(*doc)
                     : Result<NodesHeartbeatReply>(std::unexpected(doc.error()));
    if (!reply) {
      Complain("bad heartbeat reply: " + reply.error().message);
      return false;
    }
    const std::set<std::string> unknown(reply->unknown.begin(), reply->unknown.end());
    for (auto& node : nodes_) {
      if (unknown.contains(node.name)) node.registered = false;  // register it again
    }
    for (auto& [node, r] : reply->nodes) replies.insert_or_assign(node, std::move(r));
    // Each part's answer is as of its own moment: the oldest is where the next delta starts.
    generation = part == 0 ? reply->generation : std::min(generation, reply->generation);
    want_full |= reply->full_report || !unknown.empty();
  }
  Acknowledge(included);
  delta.since = generation;
  delta.want_full = want_full;
  if (full) delta.last_full_ms = now;
  if (renew) delta.last_alive_ms = now;
  return true;
}

// A last report so that the controller records the stops without waiting for a timeout.
void Agent::LastHeartbeat() {
  httplib::Client last(Server());
  last.set_tcp_nodelay(true);
  last.set_connection_timeout(1, 0);
  last.set_read_timeout(2, 0);
  credential_.Apply(last);
  if (nodes_.size() == 1) {
    const std::string path = "/v1/agents/" + nodes_.front().name + "/heartbeat?waitMs=0";
    last.Post(path.c_str(), DumpJson(ToJson(BuildRequest(nodes_.front().name))),
              "application/json");
  } else {
    last.Post("/v1/agents/heartbeat?waitMs=0", DumpJson(ToJson(BuildNodesRequest())),
              "application/json");
  }
}

int Agent::Run() {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);  // orphaned grandchildren of tasks are reaped here
  StartLogServer();
  if (agent_url_.empty()) return 1;
  {
    std::lock_guard lock(mu_);
    RecoverLeftovers();
  }
  monitor_ = std::thread([this] { MonitorLoop(); });
  Log(options_.node, "GPUs: " + std::to_string(inventory_.gpus.size()) + " from " +
                         inventory_.source +
                         (options_.simulate_nodes > 0
                              ? " on each of " + std::to_string(nodes_.size()) + " emulated nodes"
                              : "") +
                         "; logs served at " + agent_url_);
  HeartbeatLoop();
  Log(options_.node,
      options_.keep_tasks_on_exit ? "stopping; tasks keep running" : "stopping its tasks");
  if (!options_.keep_tasks_on_exit) StopAllTasks();
  cv_.notify_all();
  if (monitor_.joinable()) {
    if (options_.keep_tasks_on_exit) {
      std::lock_guard lock(mu_);
      for (auto& [id, t] : tasks_) t.alive.clear();
    }
    monitor_.join();
  }
  if (!options_.keep_tasks_on_exit) LastHeartbeat();
  if (log_server_) log_server_->stop();
  if (log_thread_.joinable()) log_thread_.join();
  return 0;
}

}  // namespace tessera
