#include "spec/protocol.h"

#include <algorithm>
#include <array>
#include <limits>
#include <type_traits>
#include <utility>

#include "spec/strict_json.h"

namespace tessera {

namespace {

using Json = nlohmann::json;

constexpr std::array<std::pair<ReportedState, const char*>, 5> kStateNames{{
    {ReportedState::kRunning, "running"},
    {ReportedState::kExited, "exited"},
    {ReportedState::kStopped, "stopped"},
    {ReportedState::kFailedToStart, "failed-to-start"},
    {ReportedState::kLost, "lost"},
}};

// Whether the JSON integer `v` fits T (ParseJson has already refused anything past int64).
template <typename T>
bool InRange(const Json& v) {
  if (v.is_number_unsigned()) {
    return v.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<T>::max());
  }
  const std::int64_t i = v.get<std::int64_t>();
  return i >= static_cast<std::int64_t>(std::numeric_limits<T>::min()) &&
         i <= static_cast<std::int64_t>(std::numeric_limits<T>::max());
}

template <typename T>
constexpr bool kIsInteger = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <typename T>
constexpr bool kIsIntegerList = false;
template <typename I>
constexpr bool kIsIntegerList<std::vector<I>> = kIsInteger<I>;

// Reads typed fields; the first type error is kept and reported.
class Reader {
 public:
  Reader(const Json& j, std::string what) : j_(j), what_(std::move(what)) {
    if (!j_.is_object()) error_ = what_ + ": must be a JSON object";
  }
  template <typename T>
  void Get(const char* key, T& out, bool required = false) {
    if (!error_.empty()) return;
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) {
      if (required) error_ = what_ + "." + key + ": required";
      return;
    }
    // nlohmann's get<int> truncates 1.5 and wraps 2^40; a wire integer must fit exactly.
    if constexpr (kIsInteger<T>) {
      ReadInteger(*it, what_ + "." + key, out);
    } else if constexpr (kIsIntegerList<T>) {
      if (!it->is_array()) {
        error_ = what_ + "." + key + ": must be a list of integers";
        return;
      }
      out.assign(it->size(), 0);
      for (std::size_t i = 0; i < it->size() && error_.empty(); ++i) {
        ReadInteger((*it)[i], what_ + "." + key + "[" + std::to_string(i) + "]", out[i]);
      }
    } else {
      try {
        out = it->get<T>();
      } catch (const std::exception&) {
        error_ = what_ + "." + key + ": wrong type";
      }
    }
  }
  template <typename T>
  void ReadInteger(const Json& v, const std::string& field, T& out) {
    if (!v.is_number_integer()) {
      error_ = field + ": must be an integer, got " +
               (v.is_number() ? v.dump() : std::string(v.type_name()));
    } else if (!InRange<T>(v)) {
      error_ = field + ": out of range, got " + v.dump();
    } else {
      out = static_cast<T>(v.get<std::int64_t>());
    }
  }
  const Json* Raw(const char* key) const {
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  void Fail(const std::string& msg) {
    if (error_.empty()) error_ = msg;
  }
  Status status() const {
    if (error_.empty()) return {};
    return InvalidArgument(error_);
  }

 private:
  const Json& j_;
  std::string what_;
  std::string error_;
};

template <typename T, typename F>
Status ReadList(Reader& r, const char* key, std::vector<T>& out, F parse) {
  const Json* list = r.Raw(key);
  if (list == nullptr || list->is_null()) return {};
  if (!list->is_array()) return InvalidArgument(std::string(key) + ": must be a list");
  for (const auto& item : *list) {
    auto v = parse(item);
    if (!v) return std::unexpected(v.error());
    out.push_back(std::move(*v));
  }
  return {};
}

}  // namespace

const char* ReportedStateName(ReportedState s) {
  for (const auto& [state, name] : kStateNames) {
    if (state == s) return name;
  }
  return "unknown";
}

Json ToJson(const GpuInfo& g) {
  return {{"index", g.index},
          {"model", g.model},
          {"name", g.name},
          {"uuid", g.uuid},
          {"memoryMiB", g.memory_mib}};
}

Json ToJson(const NodeRegistration& r) {
  Json gpus = Json::array();
  for (const auto& g : r.gpus) gpus.push_back(ToJson(g));
  Json j = {{"node", r.node},
            {"address", r.address},
            {"agentUrl", r.agent_url},
            {"simulated", r.simulated},
            {"gpus", gpus},
            {"cpuMilli", r.cpu_milli},
            {"memoryMiB", r.memory_mib},
            {"version", r.version}};
  if (!r.topology.empty()) j["topology"] = r.topology;
  return j;
}

Result<std::map<std::string, std::string>> ParseTopologyFlag(const std::string& text) {
  std::map<std::string, std::string> out;
  std::size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string pair = text.substr(start, comma - start);
    const std::size_t eq = pair.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == pair.size()) {
      return InvalidArgument("--topology: '" + pair + "': expected LEVEL=DOMAIN, e.g. leaf=l3");
    }
    if (!out.emplace(pair.substr(0, eq), pair.substr(eq + 1)).second) {
      return InvalidArgument("--topology: level '" + pair.substr(0, eq) + "' given twice");
    }
    start = comma + 1;
  }
  return out;
}

Json ToJson(const RegistrationReply& r) {
  Json j = {{"heartbeatIntervalMs", r.heartbeat_interval_ms},
            {"heartbeatTimeoutMs", r.heartbeat_timeout_ms}};
  if (r.registered > 0) j["registered"] = r.registered;
  return j;
}

Json ToJson(const NodesRegistration& r) {
  Json nodes = Json::array();
  for (const auto& n : r.nodes) nodes.push_back(ToJson(n));
  return {{"nodes", nodes}};
}

Json ToJson(const TaskLaunch& t) {
  return {{"taskId", t.task_id},
          {"job", t.job},
          {"queue", t.queue},
          {"kind", t.kind},
          {"attempt", t.attempt},
          {"rank", t.rank},
          {"taskCount", t.task_count},
          {"role", t.role},
          {"roleRank", t.role_rank},
          {"roleSize", t.role_size},
          {"processes", t.processes},
          {"processRankBase", t.process_rank_base},
          {"worldSize", t.world_size},
          {"gpus", t.gpus},
          {"gpuMilli", t.gpu_milli},
          {"command", t.command},
          {"shell", t.shell},
          {"env", t.env},
          {"masterAddr", t.master_addr},
          {"masterPort", t.master_port},
          {"gracePeriodSeconds", t.grace_period_seconds},
          {"workingDir", t.working_dir},
          {"checkpointDir", t.checkpoint_dir},
          {"checkpointIntervalSeconds", t.checkpoint_interval_seconds},
          {"cpuMilli", t.cpu_milli},
          {"memoryMib", t.memory_mib},
          {"oversold", t.oversold}};
}

Json ToJson(const TaskReport& r) {
  Json j = {{"taskId", r.task_id},
            {"state", ReportedStateName(r.state)},
            {"pid", r.pid},
            {"exitCode", r.exit_code},
            {"signal", r.signal},
            {"startedMs", r.started_ms},
            {"finishedMs", r.finished_ms}};
  if (!r.message.empty()) j["message"] = r.message;
  if (!r.isolation.empty()) j["isolation"] = r.isolation;
  if (r.seq != 0) j["seq"] = r.seq;
  return j;
}

Json ToJson(const HeartbeatRequest& r) {
  Json tasks = Json::array();
  for (const auto& t : r.tasks) tasks.push_back(ToJson(t));
  Json j = {{"tasks", tasks}};
  if (!r.usage.empty()) {
    Json usage = Json::array();
    for (const auto& u : r.usage) {
      usage.push_back({{"taskId", u.task_id},
                       {"gpu", u.gpu},
                       {"utilization", u.utilization},
                       {"memoryUsedBytes", u.memory_used_bytes}});
    }
    j["usage"] = std::move(usage);
  }
  return j;
}

Json ToJson(const HeartbeatReply& r) {
  Json run = Json::array();
  for (const auto& t : r.run) run.push_back(ToJson(t));
  Json stop = Json::array();
  for (const auto& s : r.stop) {
    Json one = {{"taskId", s.task_id}, {"gracePeriodSeconds", s.grace_period_seconds}};
    if (s.fence) one["fence"] = true;
    stop.push_back(std::move(one));
  }
  return {{"run", run}, {"stop", stop}, {"forget", r.forget}};
}

Json ToJson(const NodesHeartbeatRequest& r) {
  Json nodes = Json::object();
  for (const auto& [name, h] : r.nodes) nodes[name] = ToJson(h);
  Json j = {{"nodes", nodes}};
  if (r.delta) {
    j["delta"] = true;
    j["since"] = r.since;
    j["alive"] = r.alive;
    j["agentUrl"] = r.agent_url;
  }
  return j;
}

Json ToJson(const NodesHeartbeatReply& r) {
  Json nodes = Json::object();
  for (const auto& [name, h] : r.nodes) nodes[name] = ToJson(h);
  Json j = {{"nodes", nodes}, {"unknown", r.unknown}, {"generation", r.generation}};
  if (r.full_report) j["fullReport"] = true;
  return j;
}

Result<GpuInfo> GpuInfoFromJson(const Json& j) {
  Reader r(j, "gpu");
  GpuInfo g;
  r.Get("index", g.index, true);
  r.Get("model", g.model);
  r.Get("name", g.name);
  r.Get("uuid", g.uuid);
  r.Get("memoryMiB", g.memory_mib);
  if (auto s = r.status(); !s) return std::unexpected(s.error());
  return g;
}

Result<NodeRegistration> NodeRegistrationFromJson(const Json& j) {
  Reader r(j, "registration");
  NodeRegistration reg;
  r.Get("node", reg.node, true);
  r.Get("address", reg.address);
  r.Get("agentUrl", reg.agent_url);
  r.Get("simulated", reg.simulated);
  r.Get("cpuMilli", reg.cpu_milli);
  r.Get("memoryMiB", reg.memory_mib);
  r.Get("version", reg.version);
  r.Get("topology", reg.topology);
  if (auto s = r.status(); !s) return std::unexpected(s.error());
  if (auto s = ReadList(r, "gpus", reg.gpus, GpuInfoFromJson); !s)
    return std::unexpected(s.error());
  return reg;
}

Result<RegistrationReply> RegistrationReplyFromJson(const Json& j) {
  Reader r(j, "reply");
  RegistrationReply reply;
  r.Get("heartbeatIntervalMs", reply.heartbeat_interval_ms);
  r.Get("heartbeatTimeoutMs", reply.heartbeat_timeout_ms);
  r.Get("registered", reply.registered);
  if (auto s = r.status(); !s) return std::unexpected(s.error());
  return reply;
}

Result<NodesRegistration> NodesRegistrationFromJson(const Json& j) {
  Reader r(j, "registrations");
  NodesRegistration out;
  if (auto s = r.status(); !s) return std::unexpected(s.error());
  if (r.Raw("nodes") == nullptr) return InvalidArgument("registrations.nodes: required");
  if (auto s = ReadList(r, "nodes", out.nodes, NodeRegistrationFromJson); !s)
    return std::unexpected(s.error());
  if (out.nodes.empty() || out.nodes.size() > kMaxNodesPerRegistration) {
    return InvalidArgument("registrations.nodes: 1 to " + std::to_string(kMaxNodesPerRegistration) +
                           " nodes a request, got " + std::to_string(out.nodes.size()));
  }
  return out;
}

Result<TaskLaunch> TaskLaunchFromJson(const Json& j) {
  Reader r(j, "task");
  TaskLaunch t;
  r.Get("taskId", t.task_id, true);
  r.Get("job", t.job);
  r.Get("queue", t.queue);
  r.Get("kind", t.kind);
  r.Get("attempt", t.attempt);
  r.Get("rank", t.rank);
  r.Get("taskCount", t.task_count);
  r.Get("role", t.role);
  r.Get("roleRank", t.role_rank);
  r.Get("roleSize", t.role_size);
  r.Get("processes", t.processes);
  r.Get("processRankBase", t.process_rank_base);
  r.Get("worldSize", t.world_size);
  r.Get("gpus", t.gpus);
  r.Get("gpuMilli", t.gpu_milli);
  r.Get("command", t.command, true);
  r.Get("shell", t.shell);
  r.Get("env", t.env);
  r.Get("masterAddr", t.master_addr);
  r.Get("masterPort", t.master_port);
  r.Get("gracePeriodSeconds", t.grace_period_seconds);
  r.Get("workingDir", t.working_dir);
  r.Get("checkpointDir", t.checkpoint_dir);
  r.Get("checkpointIntervalSeconds", t.checkpoint_interval_seconds);
  r.Get("cpuMilli", t.cpu_milli);
  r.Get("memoryMib", t.memory_mib);
  r.Get("oversold", t.oversold);
  if (auto s = r.status(); !s) return std::unexpected(s.error());
  if (t.command.empty()) return InvalidArgument("task.command: must not be empty");
  if (t.processes < 1 || t.processes > 1024) return InvalidArgument("task.processes: out of range");
  return t;
}

Result<TaskReport> TaskReportFromJson(const Json& j) {
  Reader r(j, "report");
  TaskReport t;
  std::string state;
  r.Get("taskId", t.task_id, true);
  r.Get("state", state, true);
  r.Get("pid", t.pid);
  r.Get("exitCode", t.exit_code);
  r.Get("signal", t.signal);
  r.Get("startedMs", t.started_ms);
  r.Get("finishedMs", t.finished_ms);
  r.Get("message", t.message);
  r.Get("isolation", t.isolation);
  r.Get("seq", t.seq);
  if (auto s = r.status(); !s) return std::unexpected(s.error());
  if (t.seq < 0) return InvalidArgument("report.seq: must not be negative");
  bool known = false;
  for (const auto& [value, name] : kStateNames) {
    if (state == name) {
      t.state = value;
      known = true;
    }
  }
  if (!known) return InvalidArgument("report.state: unknown state \"" + state + "\"");
  return t;
}

Result<HeartbeatRequest> HeartbeatRequestFromJson(const Json& j) {
  Reader r(j, "heartbeat");
  HeartbeatRequest h;
  if (auto s = r.status(); !s) return std::unexpected(s.error());
  if (auto s = ReadList(r, "tasks", h.tasks, TaskReportFromJson); !s)
    return std::unexpected(s.error());
  auto parse_usage = [](const Json& item) -> Result<GpuUsageReport> {
    Reader ur(item, "usage");
    GpuUsageReport u;
    ur.Get("taskId", u.task_id);
    ur.Get("gpu", u.gpu, true);
    ur.Get("utilization", u.utilization, true);
    ur.Get("memoryUsedBytes", u.memory_used_bytes);
    if (auto st = ur.status(); !st) return std::unexpected(st.error());
    return u;
  };
  if (auto s = ReadList(r, "usage", h.usage, parse_usage); !s) return std::unexpected(s.error());
  return h;
}

Result<HeartbeatReply> HeartbeatReplyFromJson(const Json& j) {
  Reader r(j, "reply");
  HeartbeatReply h;
  r.Get("forget", h.forget);
  if (auto s = r.status(); !s) return std::unexpected(s.error());
  if (auto s = ReadList(r, "run", h.run, TaskLaunchFromJson); !s) return std::unexpected(s.error());
  auto parse_stop = [](const Json& item) -> Result<TaskStop> {
    Reader sr(item, "stop");
    TaskStop s;
    sr.Get("taskId", s.task_id, true);
    sr.Get("gracePeriodSeconds", s.grace_period_seconds);
    sr.Get("fence", s.fence);
    if (auto st = sr.status(); !st) return std::unexpected(st.error());
    return s;
  };
  if (auto s = ReadList(r, "stop", h.stop, parse_stop); !s) return std::unexpected(s.error());
  return h;
}

namespace {

// {"nodes": {name: item}} read with `parse` per item; the error names the node.
template <typename T, typename Parse>
Result<std::map<std::string, T>> ReadNodeMap(const Json& j, const char* what, Parse parse) {
  if (!j.is_object()) return InvalidArgument(std::string(what) + ": must be an object");
  auto it = j.find("nodes");
  if (it == j.end() || !it->is_object()) {
    return InvalidArgument(std::string(what) + ".nodes: must be an object of node names");
  }
  std::map<std::string, T> out;
  for (const auto& [name, item] : it->items()) {
    auto v = parse(item);
    if (!v) {
      return InvalidArgument(std::string(what) + ".nodes." + name + ": " + v.error().message);
    }
    out.emplace(name, std::move(*v));
  }
  return out;
}

}  // namespace

Result<NodesHeartbeatRequest> NodesHeartbeatRequestFromJson(const Json& j) {
  auto nodes = ReadNodeMap<HeartbeatRequest>(j, "heartbeat", HeartbeatRequestFromJson);
  if (!nodes) return std::unexpected(nodes.error());
  NodesHeartbeatRequest r;
  r.nodes = std::move(*nodes);
  Reader fields(j, "heartbeat");
  fields.Get("delta", r.delta);
  fields.Get("since", r.since);
  fields.Get("alive", r.alive);
  fields.Get("agentUrl", r.agent_url);
  if (auto s = fields.status(); !s) return std::unexpected(s.error());
  if (r.since < 0) return InvalidArgument("heartbeat.since: must not be negative");
  return r;
}

Result<NodesHeartbeatReply> NodesHeartbeatReplyFromJson(const Json& j) {
  auto nodes = ReadNodeMap<HeartbeatReply>(j, "reply", HeartbeatReplyFromJson);
  if (!nodes) return std::unexpected(nodes.error());
  NodesHeartbeatReply r;
  r.nodes = std::move(*nodes);
  if (auto it = j.find("unknown"); it != j.end()) {
    if (!it->is_array()) return InvalidArgument("reply.unknown: must be a list of node names");
    for (const auto& n : *it) {
      if (!n.is_string()) return InvalidArgument("reply.unknown: must be a list of node names");
      r.unknown.push_back(n.get<std::string>());
    }
  }
  Reader fields(j, "reply");
  fields.Get("generation", r.generation);
  fields.Get("fullReport", r.full_report);
  if (auto s = fields.status(); !s) return std::unexpected(s.error());
  return r;
}

Result<Json> ParseJson(std::string_view text) { return ParseStrictJson(text); }

}  // namespace tessera
