#include "server/agent_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "server/job_limits.h"
#include "server/job_views.h"
#include "server/resize_applier.h"
#include "server/unit_lifecycle.h"
#include "spec/document.h"
#include "spec/text.h"

namespace tessera {

namespace {

using Json = nlohmann::json;

// Checks a registration as the API receives it; the error names the field.
Status CheckRegistration(const NodeRegistration& reg, std::string* model) {
  if (!ValidJobName(reg.node)) {
    return InvalidArgument("node: must be 1-63 lower-case letters, digits and '-', got " +
                           Quote(reg.node));
  }
  if (reg.gpus.size() > static_cast<std::size_t>(kMaxGpusPerNode)) {
    return InvalidArgument("gpus: at most " + std::to_string(kMaxGpusPerNode) +
                           " GPUs per node, got " + std::to_string(reg.gpus.size()));
  }
  for (std::size_t i = 0; i < reg.gpus.size(); ++i) {
    if (reg.gpus[i].index != static_cast<int>(i)) {
      return InvalidArgument("gpus: indices must be 0..N-1 in order");
    }
    if (i == 0) *model = reg.gpus[i].model;
    if (reg.gpus[i].model != *model) {
      return InvalidArgument("gpus: one GPU model per node (" + *model + " and " +
                             reg.gpus[i].model + ")");
    }
  }
  if (reg.cpu_milli < 0 || reg.memory_mib < 0) {
    return InvalidArgument("cpu and memory must not be negative");
  }
  if (FirstInvalidUtf8(reg.address) || FirstInvalidUtf8(reg.agent_url) ||
      FirstInvalidUtf8(*model) || reg.address.size() > 255 || reg.agent_url.size() > 1024) {
    return InvalidArgument("address, agentUrl and models must be short UTF-8");
  }
  return {};
}

// Checks a node's place against the controller's topology levels: every level given, no
// other, each domain a short name.
Status CheckTopology(const NodeRegistration& reg, const std::vector<std::string>& levels) {
  std::string known;
  for (const auto& l : levels) known += (known.empty() ? "" : ", ") + l;
  for (const auto& [level, domain] : reg.topology) {
    if (std::find(levels.begin(), levels.end(), level) == levels.end()) {
      return InvalidArgument(
          "topology: level " + Quote(level) + " is not one of this controller's levels" +
          (levels.empty() ? std::string(" (it has none: tesserad --topology-levels)")
                          : " (" + known + ")"));
    }
    if (domain.empty() || domain.size() > 63 || FirstInvalidUtf8(domain)) {
      return InvalidArgument("topology." + level + ": a domain is 1-63 bytes of UTF-8, got " +
                             Quote(domain));
    }
  }
  for (const auto& level : levels) {
    if (!reg.topology.contains(level)) {
      return InvalidArgument("topology: level " + Quote(level) +
                             " missing; this controller's levels are " + known +
                             " (tessera-agent --topology " + levels.front() + "=DOMAIN,...)");
    }
  }
  return {};
}

}  // namespace

Status AgentService::CheckLocked(const NodeRegistration& reg, std::string* model) const {
  if (auto s = CheckRegistration(reg, model); !s) return s;
  return CheckTopology(reg, core_.options().topology_levels);
}

void AgentService::PutRegistrationLocked(const NodeRegistration& reg, const std::string& model,
                                         ChangeBuilder& change) {
  auto& state = core_.state;
  NodeRecord rec;
  if (auto existing = state.nodes.find(reg.node); existing != state.nodes.end())
    rec = existing->second.rec;
  rec.name = reg.node;
  rec.address = reg.address.empty() ? "127.0.0.1" : reg.address;
  rec.agent_url = reg.agent_url;
  rec.gpu_model = model;
  rec.gpu_count = static_cast<int>(reg.gpus.size());
  rec.simulated = reg.simulated;
  rec.cpu_milli = reg.cpu_milli;
  rec.memory_mib = reg.memory_mib;
  Json gpus = Json::array();
  for (const auto& g : reg.gpus) gpus.push_back(ToJson(g));
  rec.gpus_json = DumpJson(gpus);
  rec.topology_json = DumpJson(Json(reg.topology));
  rec.status = NodeStatus::kReady;
  rec.registered_ms = core_.Now();
  rec.version = reg.version;
  rec.message = "";
  change.Event("NodeRegistered", "node/" + rec.name,
               std::to_string(rec.gpu_count) + " x " + (model.empty() ? "no GPU" : model) +
                   (reg.simulated ? " (simulated)" : "") + " at " + rec.address);
  change.PutNode(std::move(rec));
}

RegistrationReply AgentService::RegistrationReplyLocked(const std::vector<std::string>& nodes,
                                                        int registered) {
  const Tick now = core_.Now();
  for (const auto& node : nodes) core_.state.nodes[node].last_seen = now;
  RegistrationReply reply;
  reply.heartbeat_interval_ms = core_.options().heartbeat_interval_ms;
  reply.heartbeat_timeout_ms = core_.options().heartbeat_timeout_ms;
  reply.registered = registered;
  return reply;
}

ApiResult<RegistrationReply> AgentService::Register(const NodeRegistration& reg) {
  std::lock_guard lock(core_.mu);
  std::string model;
  if (auto s = CheckLocked(reg, &model); !s) return std::unexpected(ApiErr(s.error()));
  ChangeBuilder change(core_.state);
  PutRegistrationLocked(reg, model, change);
  change.RequestSchedule();
  if (auto s = core_.CommitLocked(change); !s) return std::unexpected(ApiErr(s.error()));
  return RegistrationReplyLocked({reg.node}, 0);
}

ApiResult<RegistrationReply> AgentService::RegisterNodes(const NodesRegistration& regs) {
  std::lock_guard lock(core_.mu);
  // Every registration is checked before any is applied: one bad node refuses the request.
  std::vector<std::string> models(regs.nodes.size()), names;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < regs.nodes.size(); ++i) {
    const NodeRegistration& reg = regs.nodes[i];
    if (auto s = CheckLocked(reg, &models[i]); !s) {
      return std::unexpected(ApiErr(InvalidArgument("nodes[" + std::to_string(i) + "] (" +
                                                    Quote(reg.node) + "): " + s.error().message)));
    }
    if (!seen.insert(reg.node).second) {
      return std::unexpected(ApiErr(InvalidArgument("nodes[" + std::to_string(i) + "]: node " +
                                                    Quote(reg.node) + " is listed twice")));
    }
    names.push_back(reg.node);
  }
  ChangeBuilder change(core_.state);
  for (std::size_t i = 0; i < regs.nodes.size(); ++i)
    PutRegistrationLocked(regs.nodes[i], models[i], change);
  change.RequestSchedule();
  // One commit for the batch: 500 emulated nodes cost one transaction, not 500.
  if (auto s = core_.CommitLocked(change); !s) return std::unexpected(ApiErr(s.error()));
  return RegistrationReplyLocked(names, static_cast<int>(names.size()));
}

HeartbeatReply AgentService::ReplyForLocked(const std::string& node, const HeartbeatRequest& req,
                                            bool delta, bool* news) const {
  const auto& state = core_.state;
  HeartbeatReply reply;
  *news = false;
  std::map<std::int64_t, ReportedState> reported;
  for (const auto& r : req.tasks) reported[r.task_id] = r.state;
  if (auto live = state.live_by_node.find(node); live != state.live_by_node.end()) {
    for (auto id : live->second) {
      const TaskRecord& t = state.tasks.at(id);
      auto rep = reported.find(id);
      // A delta names only what changed, so "not reported" says nothing there: every task to
      // run or stop of a node that changed is news (the agent ignores what it already has).
      if (t.state == TaskState::kAssigned) {
        reply.run.push_back(LaunchOfLocked(t));
        if (delta || rep == reported.end()) *news = true;
      } else if (t.state == TaskState::kStopping &&
                 (delta ? rep == reported.end() || rep->second == ReportedState::kRunning
                        : rep != reported.end() && rep->second == ReportedState::kRunning)) {
        auto jit = state.jobs.find(t.job_id);
        const int grace = jit == state.jobs.end() ? 30 : jit->second.spec.grace_period_seconds;
        reply.stop.push_back({id, grace});
        *news = true;
      }
    }
  }
  for (const auto& r : req.tasks) {
    auto it = state.tasks.find(r.task_id);
    const bool live_here =
        it != state.tasks.end() && IsLive(it->second.state) && it->second.node == node;
    if (r.state == ReportedState::kRunning && !live_here) {
      // A stray: not (or no longer) this node's task. One the controller ended (its node was
      // lost, its unit restarted: a replaced attempt) is fenced, killed without a grace period.
      const bool replaced = it != state.tasks.end() && !IsLive(it->second.state);
      reply.stop.push_back({.task_id = r.task_id, .grace_period_seconds = 10, .fence = replaced});
      *news = true;
    } else if (r.state != ReportedState::kRunning && !live_here) {
      reply.forget.push_back(r.task_id);
      *news = true;
    }
  }
  return reply;
}

void AgentService::EndUnreportedTasksLocked(const std::string& node,
                                            const std::set<std::int64_t>& reported,
                                            ChangeBuilder& change) {
  const auto& state = core_.state;
  const Tick now = core_.Now();
  if (auto live = state.live_by_node.find(node); live != state.live_by_node.end()) {
    const std::vector<std::int64_t> ids(live->second.begin(), live->second.end());
    for (auto id : ids) {
      if (reported.contains(id)) continue;
      const TaskRecord& t = change.Task(id);
      if (t.state == TaskState::kAssigned) continue;  // in this reply's run list
      auto jit = state.jobs.find(t.job_id);
      if (jit == state.jobs.end()) continue;
      auto& m = change.MutableTask(id);
      if (m.state == TaskState::kStopping) {
        m.state = TaskState::kStopped;
        change.Event("TaskStopped", JobObject(jit->second.rec),
                     "task " + std::to_string(id) + " (rank " + std::to_string(m.rank) +
                         ") stopped before it ran");
      } else if (m.state == TaskState::kRunning) {
        m.state = TaskState::kLost;
        m.message = "the agent on " + node + " no longer has this task";
        change.Event("TaskLost", JobObject(jit->second.rec),
                     "task " + std::to_string(id) + ": " + m.message);
      } else {
        continue;
      }
      m.finished_ms = now;
      change.RequestSchedule();
      EvaluateUnit(change, jit->second, m.unit, now);
    }
  }
}

bool AgentService::RecordHeartbeatLocked(RegisteredNode& ns, const HeartbeatRequest& req,
                                         bool full_view, ChangeBuilder& change) {
  auto& state = core_.state;
  const std::string& node = ns.rec.name;
  const Tick now = core_.Now();
  ns.last_seen = now;
  std::set<std::int64_t> reported;
  bool strays = false;
  for (const auto& r : req.tasks) {
    reported.insert(r.task_id);
    if (StaleLocked(r)) continue;  // its task is as a newer report left it, not a stray
    RecordTaskReport(change, node, r, now, state.awaiting_readoption);
    if (r.state == ReportedState::kRunning) {
      if (!change.HasTask(r.task_id)) {
        strays = true;
      } else if (const TaskRecord& t = change.Task(r.task_id); !IsLive(t.state) || t.node != node) {
        strays = true;
      }
    }
  }
  if (full_view) {
    EndUnreportedTasksLocked(node, reported, change);
  } else {
    strays |= ns.has_strays;  // a delta cannot clear them: the next full report does
  }
  if (full_view || !req.usage.empty()) {
    RecordGpuUsageLocked(state, state.gpu_usage, node, req.usage, now,
                         core_.options().usage_window_ms);
  }
  if (ns.rec.status != NodeStatus::kReady || strays != ns.has_strays) {
    NodeRecord rec = ns.rec;
    if (rec.status != NodeStatus::kReady) {
      change.Event(
          "NodeReady", "node/" + node,
          std::string("heartbeats resumed") + (strays ? "; stopping stray tasks first" : ""));
    }
    rec.status = NodeStatus::kReady;
    rec.message = strays ? "stopping tasks it should not run; not schedulable until they end" : "";
    change.PutNode(std::move(rec));
    change.RequestSchedule();
  }
  return strays;
}

ApiResult<HeartbeatReply> AgentService::Heartbeat(const std::string& node,
                                                  const HeartbeatRequest& req, Tick wait_ms) {
  std::unique_lock lock(core_.mu);
  auto& state = core_.state;
  auto nit = state.nodes.find(node);
  if (nit == state.nodes.end()) {
    return std::unexpected(ApiErr(NotFound("node " + node + " is not registered")));
  }
  RegisteredNode& ns = nit->second;
  ChangeBuilder change(state);
  const bool strays = RecordHeartbeatLocked(ns, req, true, change);
  if (auto s = core_.CommitLocked(change); !s) return std::unexpected(ApiErr(s.error()));
  ns.has_strays = strays;

  bool news = false;
  HeartbeatReply reply = ReplyForLocked(node, req, false, &news);
  if (!news && wait_ms > 0) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
    while (!news && !core_.stopping) {
      if (core_.changed.wait_until(lock, deadline) == std::cv_status::timeout) break;
      reply = ReplyForLocked(node, req, false, &news);
    }
    if (!news) reply = ReplyForLocked(node, req, false, &news);
  }
  if (auto again = state.nodes.find(node); again != state.nodes.end())
    again->second.last_seen = core_.Now();
  return reply;
}

ApiResult<NodesHeartbeatReply> AgentService::HeartbeatNodes(const NodesHeartbeatRequest& req,
                                                            Tick wait_ms,
                                                            const NodeScope& may_act_for) {
  return req.delta ? DeltaHeartbeatNodes(req, wait_ms, may_act_for)
                   : FullHeartbeatNodes(req, wait_ms);
}

ApiResult<NodesHeartbeatReply> AgentService::FullHeartbeatNodes(const NodesHeartbeatRequest& req,
                                                                Tick wait_ms) {
  std::unique_lock lock(core_.mu);
  auto& state = core_.state;
  NodesHeartbeatReply out;
  ChangeBuilder change(state);
  std::vector<std::pair<RegisteredNode*, bool>> strays;
  for (const auto& [node, hb] : req.nodes) {
    auto nit = state.nodes.find(node);
    if (nit == state.nodes.end()) {
      out.unknown.push_back(node);
      continue;
    }
    strays.emplace_back(&nit->second, RecordHeartbeatLocked(nit->second, hb, true, change));
  }
  // One commit for all the nodes: a thousand emulated nodes cost one transaction, not 1,000.
  if (auto s = core_.CommitLocked(change); !s) return std::unexpected(ApiErr(s.error()));
  for (auto& [ns, has] : strays) ns->has_strays = has;

  auto replies = [&] {
    bool any = false;
    out.nodes.clear();
    out.generation = state.node_tasks.generation();
    for (const auto& [node, hb] : req.nodes) {
      if (!state.nodes.contains(node)) continue;
      bool news = false;
      HeartbeatReply r = ReplyForLocked(node, hb, false, &news);
      if (news || !r.run.empty() || !r.stop.empty() || !r.forget.empty()) {
        out.nodes.emplace(node, std::move(r));
      }
      any |= news;
    }
    return any;
  };
  bool news = replies() || !out.unknown.empty();
  if (!news && wait_ms > 0) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
    while (!news && !core_.stopping) {
      if (core_.changed.wait_until(lock, deadline) == std::cv_status::timeout) break;
      news = replies();
    }
    if (!news) replies();
  }
  const Tick now = core_.Now();
  for (auto& [ns, has] : strays) ns->last_seen = now;
  return out;
}

ApiResult<NodesHeartbeatReply> AgentService::DeltaHeartbeatNodes(const NodesHeartbeatRequest& req,
                                                                 Tick wait_ms,
                                                                 const NodeScope& may_act_for) {
  std::unique_lock lock(core_.mu);
  auto& state = core_.state;
  NodesHeartbeatReply out;
  if (!state.node_tasks.Answers(req.since)) {
    out.full_report = true;  // another controller's generation, or none yet
    out.generation = state.node_tasks.generation();
    return out;
  }
  const Tick now = core_.Now();
  // A node that was not Ready (Lost: its tasks were ended here) is taken back only on a full
  // report, which finds the tasks its agent still runs.
  auto usable = [&](const std::string& node) -> RegisteredNode* {
    auto nit = state.nodes.find(node);
    if (nit == state.nodes.end()) {
      out.unknown.push_back(node);
      return nullptr;
    }
    if (nit->second.rec.status != NodeStatus::kReady) {
      out.full_report = true;
      return nullptr;
    }
    return &nit->second;
  };
  for (const auto& node : req.alive) {
    if (RegisteredNode* ns = usable(node)) ns->last_seen = now;
  }
  ChangeBuilder change(state);
  std::vector<std::pair<RegisteredNode*, bool>> strays;
  for (const auto& [node, hb] : req.nodes) {
    if (RegisteredNode* ns = usable(node))
      strays.emplace_back(ns, RecordHeartbeatLocked(*ns, hb, false, change));
  }
  if (auto s = core_.CommitLocked(change); !s) return std::unexpected(ApiErr(s.error()));
  for (auto& [ns, has] : strays) {
    ns->has_strays = has;
    out.full_report |= has;  // only a full report shows that the strays are gone
  }

  // First the reports' answers (forgets, stray stops, and what their nodes should run), then
  // every node of this agent whose tasks changed after `since`; while waiting, only the changes
  // after the last look, so a long poll costs what changes, not what the agent has.
  std::int64_t looked = req.since;
  bool news = !out.unknown.empty() || out.full_report;
  auto add = [&](const std::string& node, const HeartbeatRequest& hb) {
    bool n = false;
    HeartbeatReply r = ReplyForLocked(node, hb, true, &n);
    if (!n && r.forget.empty()) return;
    news = true;
    out.nodes.insert_or_assign(node, std::move(r));
  };
  for (const auto& [node, hb] : req.nodes) {
    if (state.nodes.contains(node)) add(node, hb);
  }
  const HeartbeatRequest nothing;
  auto look = [&] {
    const std::int64_t upto = state.node_tasks.generation();
    state.node_tasks.ForEachSince(looked, [&](const std::string& node) {
      if (auto reported = req.nodes.find(node); reported != req.nodes.end()) {
        if (state.nodes.contains(node)) add(node, reported->second);
        return;
      }
      auto nit = state.nodes.find(node);
      if (nit == state.nodes.end() || nit->second.rec.agent_url != req.agent_url) return;
      if (nit->second.rec.status != NodeStatus::kReady) return;
      if (may_act_for && !may_act_for(node)) return;
      add(node, nothing);
    });
    looked = upto;
    out.generation = upto;
  };
  look();
  if (!news && wait_ms > 0) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
    while (!news && !core_.stopping) {
      if (core_.changed.wait_until(lock, deadline) == std::cv_status::timeout) break;
      look();
    }
    if (!news) look();
  }
  const Tick end = core_.Now();
  for (auto& [ns, has] : strays) ns->last_seen = end;
  return out;
}

bool AgentService::StaleLocked(const TaskReport& report) {
  if (report.seq == 0) return false;
  auto [it, added] = report_seq_.try_emplace(report.task_id, report.seq);
  if (!added) {
    if (report.seq < it->second) return true;
    it->second = report.seq;
    return false;
  }
  // Bounded by the tasks the controller still knows: entries of purged tasks go in bulk.
  if (report_seq_.size() > 2 * core_.state.tasks.size() + 1024) {
    std::erase_if(report_seq_, [&](const auto& e) { return !core_.state.tasks.contains(e.first); });
  }
  return false;
}

ApiResult<Json> AgentService::ReportTask(const std::string& node, const TaskReport& report) {
  std::lock_guard lock(core_.mu);
  auto& state = core_.state;
  auto nit = state.nodes.find(node);
  if (nit == state.nodes.end())
    return std::unexpected(ApiErr(NotFound("node " + node + " is not registered")));
  auto it = state.tasks.find(report.task_id);
  if (it == state.tasks.end()) {
    return std::unexpected(
        ApiErr(NotFound("task " + std::to_string(report.task_id) + " not found")));
  }
  if (it->second.node != node) {
    return std::unexpected(ApiErr(FailedPrecondition("task " + std::to_string(report.task_id) +
                                                     " is assigned to " + it->second.node)));
  }
  const Tick now = core_.Now();
  nit->second.last_seen = now;
  if (StaleLocked(report)) return TaskJson(state, it->second);
  ChangeBuilder change(state);
  RecordTaskReport(change, node, report, now, state.awaiting_readoption);
  if (auto s = core_.CommitLocked(change); !s) return std::unexpected(ApiErr(s.error()));
  return TaskJson(state, state.tasks.at(report.task_id));
}

ApiResult<Json> AgentService::ReportTasks(const NodesHeartbeatRequest& reports) {
  std::lock_guard lock(core_.mu);
  auto& state = core_.state;
  ChangeBuilder change(state);
  std::size_t recorded = 0;
  const Tick now = core_.Now();
  for (const auto& [node, req] : reports.nodes) {
    auto nit = state.nodes.find(node);
    if (nit == state.nodes.end()) continue;
    nit->second.last_seen = now;
    for (const auto& r : req.tasks) {
      if (StaleLocked(r)) continue;
      // Ignores tasks that are not this node's.
      RecordTaskReport(change, node, r, now, state.awaiting_readoption);
      ++recorded;
    }
  }
  // One commit for every exit of the batch.
  if (auto s = core_.CommitLocked(change); !s) return std::unexpected(ApiErr(s.error()));
  return Json{{"reports", recorded}};
}

TaskLaunch AgentService::LaunchOfLocked(const TaskRecord& t) const {
  const JobState& job = core_.state.jobs.at(t.job_id);
  const JobSpec& spec = job.spec;
  TaskLaunch l;
  l.task_id = t.id;
  l.job = job.rec.name;
  l.queue = job.rec.queue;
  l.kind = job.rec.kind;
  l.attempt = t.attempt;
  l.rank = t.rank;
  l.task_count = spec.TaskCount();
  auto [role, role_rank] = spec.RoleOfRank(t.rank);
  l.role = role->name;
  l.role_rank = role_rank;
  l.role_size = role->count;
  l.processes = role->processes_per_worker;
  int base = 0, world = 0;
  int remaining = t.rank;
  for (const auto& r : spec.roles) {
    const int before = std::clamp(remaining, 0, r.count);
    base += before * r.processes_per_worker;
    remaining -= r.count;
    world += r.count * r.processes_per_worker;
  }
  if (spec.min_workers > 0) {
    // Elastic: the gang is as large as this attempt was placed (its ranks are 0..n-1).
    const int workers = AttemptWorkers(core_.state, job, t);
    l.task_count = workers;
    l.role_size = workers;
    world = workers * role->processes_per_worker;
  }
  l.process_rank_base = base;
  l.world_size = world;
  l.gpus = t.gpus;
  l.gpu_milli = t.gpu_milli;
  l.cpu_milli = t.cpu_milli;
  l.memory_mib = t.memory_mib;
  l.oversold = t.oversold;
  l.command = role->command;
  l.shell = spec.shell;
  l.env = spec.env;
  l.env["TESSERA_NODES"] = GangNodes(core_.state, job, t);
  l.master_addr = t.master_addr;
  l.master_port = t.master_port;
  l.grace_period_seconds = spec.grace_period_seconds;
  l.working_dir = spec.working_dir;
  l.checkpoint_dir = spec.checkpoint_dir;
  l.checkpoint_interval_seconds = spec.checkpoint_interval_seconds;
  return l;
}

void AgentService::MarkLostLocked(const std::string& name, RegisteredNode& ns, Tick now) {
  auto& state = core_.state;
  ChangeBuilder change(state);
  NodeRecord rec = ns.rec;
  rec.status = NodeStatus::kLost;
  rec.message = "no heartbeat for " + std::to_string((now - ns.last_seen) / 1000) + "s";
  change.Event("NodeLost", "node/" + name, rec.message);
  spdlog::warn("node {} lost: {}", name, rec.message);
  change.PutNode(std::move(rec));
  std::set<std::pair<std::int64_t, int>> units;
  if (auto live = state.live_by_node.find(name); live != state.live_by_node.end()) {
    for (auto id : live->second) {
      auto& t = change.MutableTask(id);
      t.state = TaskState::kLost;
      t.finished_ms = now;
      t.message = "node " + name + " lost (no heartbeat)";
      units.insert({t.job_id, t.unit});
      if (auto jit = state.jobs.find(t.job_id); jit != state.jobs.end()) {
        change.Event("TaskLost", JobObject(jit->second.rec),
                     "task " + std::to_string(id) + " (rank " + std::to_string(t.rank) +
                         ") lost with node " + name);
      }
    }
  }
  for (const auto& [job_id, u] : units) {
    if (auto jit = state.jobs.find(job_id); jit != state.jobs.end())
      EvaluateUnit(change, jit->second, u, now);
  }
  change.RequestSchedule();
  if (auto s = core_.CommitLocked(change); !s) {  // the node is retried on the next check
    spdlog::error("marking node {} lost not committed: {}", name, s.error().message);
  }
}

void AgentService::CheckLiveness() {
  std::lock_guard lock(core_.mu);
  const Tick now = core_.Now();
  for (auto& [name, ns] : core_.state.nodes) {
    if (ns.rec.status != NodeStatus::kReady ||
        now - ns.last_seen <= core_.options().heartbeat_timeout_ms) {
      continue;
    }
    MarkLostLocked(name, ns, now);
  }
}

}  // namespace tessera
