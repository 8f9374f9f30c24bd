#include "server/controller_state.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "server/change_builder.h"
#include "server/service_scaling.h"

namespace tessera {

std::string ResizeTargetJson(const ResizeTarget& target) {
  nlohmann::json ranks = nlohmann::json::array();
  for (std::size_t i = 0; i < target.placement.size(); ++i) {
    const TaskPlacement& tp = target.placement[i];
    ranks.push_back({{"node", target.nodes.at(i)},
                     {"gpuMask", tp.gpu_mask},
                     {"gpuMilli", tp.gpu_milli},
                     {"cpuMilli", tp.cpu_milli},
                     {"memoryMib", tp.memory_mib}});
  }
  return nlohmann::json{{"unit", target.unit},
                        {"fromAttempt", target.from_attempt},
                        {"fromWorkers", target.from_workers},
                        {"ranks", ranks}}
      .dump();
}

std::optional<ResizeTarget> ResizeTargetFromJson(const std::string& json) {
  if (json.empty()) return std::nullopt;
  const auto doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return std::nullopt;
  try {
    ResizeTarget t;
    t.unit = doc.at("unit").get<int>();
    t.from_attempt = doc.at("fromAttempt").get<int>();
    t.from_workers = doc.at("fromWorkers").get<int>();
    for (const auto& r : doc.at("ranks")) {
      TaskPlacement tp;  // node ids are looked up by name in each cycle
      tp.gpu_mask = r.at("gpuMask").get<std::uint16_t>();
      tp.gpu_milli = r.at("gpuMilli").get<std::int32_t>();
      tp.cpu_milli = r.at("cpuMilli").get<std::int64_t>();
      tp.memory_mib = r.at("memoryMib").get<std::int64_t>();
      t.placement.push_back(tp);
      t.nodes.push_back(r.at("node").get<std::string>());
    }
    if (t.placement.empty()) return std::nullopt;
    return t;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // a record this build cannot read: the scheduler places the unit
  }
}

namespace {

// A live task of a job of `state` counts for its queue in the index (sign +1), or stops (-1).
void CountLiveTask(ControllerState& state, const TaskRecord& task, int sign) {
  if (auto job = state.jobs.find(task.job_id); job != state.jobs.end())
    state.index.LiveTask(job->second.rec.queue, task, sign);
}

}  // namespace

std::optional<std::int64_t> ControllerState::FindJob(const std::string& queue,
                                                     const std::string& name) const {
  auto it = job_ids.find({queue, name});
  if (it == job_ids.end()) return std::nullopt;
  return it->second;
}

void ControllerState::NoteChanged(std::int64_t id) {
  if (changed_jobs.size() >= kMaxChangedJobs) {
    changed_jobs.clear();
    changed_overflow = true;
  }
  changed_jobs.push_back(id);
}

void ControllerState::AddJob(JobState job) {
  const auto id = job.rec.id;
  NoteChanged(id);
  if (job.rec.finished_ms == 0) {
    if (!job.spec.dependencies.empty()) with_dependencies.insert(id);
    if (IsAutoscaled(job)) autoscaled.insert(id);
    if (job.spec.time_limit_seconds > 0) time_limited.insert(id);
  }
  job.first_unit_id = next_unit_id;
  next_unit_id += static_cast<std::uint32_t>(std::max<std::size_t>(job.units.size(), 1));
  job_ids[{job.rec.queue, job.rec.name}] = id;
  next_job_id = std::max(next_job_id, id + 1);
  if (job.rec.finished_ms == 0) active.insert(id);
  if (auto old = jobs.find(id); old != jobs.end()) index.Remove(old->second);
  JobState& added = jobs.insert_or_assign(id, std::move(job)).first->second;
  index.File(added);
  // Loaded with its tasks (ControllerCore::LoadLocked): those still live count for its queue.
  for (auto tid : added.tasks) {
    if (auto t = tasks.find(tid); t != tasks.end() && IsLive(t->second.state))
      index.LiveTask(added.rec.queue, t->second, +1);
  }
}

void ControllerState::Deactivate(std::int64_t id) {
  active.erase(id);
  with_dependencies.erase(id);
  autoscaled.erase(id);
  time_limited.erase(id);
}

void ControllerState::CountLiveEndpoint(const TaskRecord& task, int sign) {
  auto it = live_endpoints.try_emplace({task.master_addr, task.master_port}, 0).first;
  it->second += sign;
  if (it->second <= 0) live_endpoints.erase(it);
}

void ControllerState::Apply(ChangeBuilder& change, std::vector<EventRecord> committed,
                            std::size_t events_in_memory) {
  for (auto& job : change.new_jobs()) AddJob(std::move(job));
  for (const auto& q : change.change().put_queues) queues.emplace(q.name, q);
  std::set<std::int64_t> changed;  // jobs to file again once every record is in
  for (auto& [id, j] : change.jobs()) {
    auto it = jobs.find(id);
    if (it != jobs.end()) it->second.rec = j;
    if (j.finished_ms != 0) Deactivate(id);
    changed.insert(id);
  }
  for (auto& [key, u] : change.units()) {
    auto it = jobs.find(key.first);
    if (it == jobs.end()) continue;
    changed.insert(key.first);
    auto& units = it->second.units;
    if (static_cast<std::size_t>(key.second) >= units.size())
      units.resize(static_cast<std::size_t>(key.second) + 1);
    units[static_cast<std::size_t>(key.second)] = u;
  }
  for (auto& [id, t] : change.tasks()) {
    auto old = tasks.find(id);
    node_tasks.Note(t.node);
    if (old != tasks.end() && old->second.node != t.node) node_tasks.Note(old->second.node);
    if (old != tasks.end()) {
      if (IsLive(old->second.state)) {
        live_by_node[old->second.node].erase(id);
        CountLiveEndpoint(old->second, -1);
        CountLiveTask(*this, old->second, -1);
      }
    } else {
      auto it = jobs.find(t.job_id);
      if (it != jobs.end()) it->second.tasks.push_back(id);
      next_task_id = std::max(next_task_id, id + 1);
    }
    if (IsLive(t.state)) {
      live_by_node[t.node].insert(id);
      CountLiveEndpoint(t, +1);
      CountLiveTask(*this, t, +1);
    } else {
      awaiting_readoption.erase(id);
    }
    NoteChanged(t.job_id);
    tasks[id] = t;
  }
  for (auto& [name, n] : change.nodes()) {
    auto& node = nodes[name];
    if (node.rec.gpu_count != n.gpu_count || node.rec.gpu_model != n.gpu_model ||
        node.rec.cpu_milli != n.cpu_milli || node.rec.memory_mib != n.memory_mib ||
        node.rec.topology_json != n.topology_json || node.rec.name.empty()) {
      ++node_generation;
    }
    node.rec = n;
  }
  for (auto id : changed) {
    NoteChanged(id);
    if (auto it = jobs.find(id); it != jobs.end()) index.File(it->second);
  }
  for (auto id : change.change().delete_jobs) {
    auto it = jobs.find(id);
    if (it == jobs.end()) continue;
    for (auto tid : it->second.tasks) tasks.erase(tid);
    job_ids.erase({it->second.rec.queue, it->second.rec.name});
    Deactivate(id);
    NoteChanged(id);
    index.Remove(it->second);
    jobs.erase(it);
  }
  for (auto& e : committed) {
    last_seq = std::max(last_seq, e.seq);
    events.push_back(std::move(e));
  }
  while (events.size() > events_in_memory) events.pop_front();
}

}  // namespace tessera
