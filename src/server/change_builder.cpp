#include "server/change_builder.h"

namespace tessera {

std::string JobObject(const JobRecord& job) { return "job/" + job.queue + "/" + job.name; }

bool ChangeBuilder::HasTask(std::int64_t id) const {
  return tasks_.contains(id) || state_->tasks.contains(id);
}

const TaskRecord& ChangeBuilder::Task(std::int64_t id) const {
  auto it = tasks_.find(id);
  return it != tasks_.end() ? it->second : state_->tasks.at(id);
}

TaskRecord& ChangeBuilder::MutableTask(std::int64_t id) {
  auto it = tasks_.find(id);
  if (it == tasks_.end()) it = tasks_.emplace(id, state_->tasks.at(id)).first;
  return it->second;
}

void ChangeBuilder::AddTask(TaskRecord task) {
  added_tasks_[task.job_id].push_back(task.id);
  const std::int64_t id = task.id;
  tasks_[id] = std::move(task);
}

const std::vector<std::int64_t>& ChangeBuilder::AddedTasks(std::int64_t job_id) const {
  static const std::vector<std::int64_t> kNone;
  auto it = added_tasks_.find(job_id);
  return it == added_tasks_.end() ? kNone : it->second;
}

const UnitRecord& ChangeBuilder::Unit(const JobState& job, int unit) const {
  auto it = units_.find({job.rec.id, unit});
  return it != units_.end() ? it->second : job.units[static_cast<std::size_t>(unit)];
}

UnitRecord& ChangeBuilder::MutableUnit(const JobState& job, int unit) {
  auto it = units_.find({job.rec.id, unit});
  if (it == units_.end()) {
    it = units_.emplace(std::make_pair(job.rec.id, unit), job.units[static_cast<std::size_t>(unit)])
             .first;
  }
  return it->second;
}

const JobRecord& ChangeBuilder::Job(const JobState& job) const {
  auto it = jobs_.find(job.rec.id);
  return it != jobs_.end() ? it->second : job.rec;
}

JobRecord& ChangeBuilder::MutableJob(const JobState& job) {
  auto it = jobs_.find(job.rec.id);
  if (it == jobs_.end()) it = jobs_.emplace(job.rec.id, job.rec).first;
  return it->second;
}

void ChangeBuilder::AddNewJob(JobState job) {
  change_.put_jobs.push_back(job.rec);
  for (const auto& u : job.units) change_.put_units.push_back(u);
  new_jobs_.push_back(std::move(job));
}

void ChangeBuilder::Event(std::string type, std::string object, std::string message, Tick time_ms) {
  change_.events.push_back({0, time_ms, std::move(type), std::move(object), std::move(message)});
}

const Change& ChangeBuilder::Finish() {
  for (const auto& [id, j] : jobs_) change_.put_jobs.push_back(j);
  for (const auto& [key, u] : units_) change_.put_units.push_back(u);
  for (const auto& [id, t] : tasks_) change_.put_tasks.push_back(t);
  for (const auto& [name, n] : nodes_) change_.put_nodes.push_back(n);
  return change_;
}

}  // namespace tessera
