#include "server/controller_state.h"

#include <algorithm>

#include "server/change_builder.h"

namespace tessera {

std::optional<std::int64_t> ControllerState::FindJob(const std::string& queue,
                                                     const std::string& name) const {
  auto it = job_ids.find({queue, name});
  if (it == job_ids.end()) return std::nullopt;
  return it->second;
}

void ControllerState::AddJob(JobState job) {
  const auto id = job.rec.id;
  job.first_unit_id = next_unit_id;
  next_unit_id += static_cast<std::uint32_t>(std::max<std::size_t>(job.units.size(), 1));
  job_ids[{job.rec.queue, job.rec.name}] = id;
  next_job_id = std::max(next_job_id, id + 1);
  if (job.rec.finished_ms == 0) active.insert(id);
  jobs.insert_or_assign(id, std::move(job));
}

void ControllerState::Apply(ChangeBuilder& change, std::vector<EventRecord> committed,
                            std::size_t events_in_memory) {
  for (auto& job : change.new_jobs()) AddJob(std::move(job));
  for (const auto& q : change.change().put_queues) queues.emplace(q.name, q);
  for (auto& [id, j] : change.jobs()) {
    auto it = jobs.find(id);
    if (it != jobs.end()) it->second.rec = j;
    if (j.finished_ms != 0) active.erase(id);
  }
  for (auto& [key, u] : change.units()) {
    auto it = jobs.find(key.first);
    if (it == jobs.end()) continue;
    auto& units = it->second.units;
    if (static_cast<std::size_t>(key.second) >= units.size())
      units.resize(static_cast<std::size_t>(key.second) + 1);
    units[static_cast<std::size_t>(key.second)] = u;
  }
  for (auto& [id, t] : change.tasks()) {
    auto old = tasks.find(id);
    if (old != tasks.end()) {
      if (IsLive(old->second.state)) live_by_node[old->second.node].erase(id);
    } else {
      auto it = jobs.find(t.job_id);
      if (it != jobs.end()) it->second.tasks.push_back(id);
      next_task_id = std::max(next_task_id, id + 1);
    }
    if (IsLive(t.state)) live_by_node[t.node].insert(id);
    if (!IsLive(t.state)) awaiting_readoption.erase(id);
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
  for (auto id : change.change().delete_jobs) {
    auto it = jobs.find(id);
    if (it == jobs.end()) continue;
    for (auto tid : it->second.tasks) tasks.erase(tid);
    job_ids.erase({it->second.rec.queue, it->second.rec.name});
    active.erase(id);
    jobs.erase(it);
  }
  for (auto& e : committed) {
    last_seq = std::max(last_seq, e.seq);
    events.push_back(std::move(e));
  }
  while (events.size() > events_in_memory) events.pop_front();
}

}  // namespace tessera
