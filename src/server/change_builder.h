// A change under construction: copies of every record it touches, read back through the
// accessors below so that later steps of one operation see earlier ones, plus what goes to the
// store as is (new queues, deleted jobs, events). Nothing reaches memory before the store has
// committed it (ControllerCore::CommitLocked, then ControllerState::Apply).
//
// Thread-safety: none; built and committed under ControllerCore's mutex, over the state it
// was created with.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "server/controller_state.h"
#include "store/records.h"

namespace tessera {

class ChangeBuilder {
 public:
  explicit ChangeBuilder(const ControllerState& state) : state_(&state) {}

  const ControllerState& state() const { return *state_; }

  // Tasks. REQUIRES: the task exists in the state or in this change.
  bool HasTask(std::int64_t id) const;
  const TaskRecord& Task(std::int64_t id) const;
  TaskRecord& MutableTask(std::int64_t id);
  // A new task of `job_id`; its id must be new.
  void AddTask(TaskRecord task);
  // Tasks this change creates for a job, in creation order.
  const std::vector<std::int64_t>& AddedTasks(std::int64_t job_id) const;

  // Units and jobs of a job in the state.
  const UnitRecord& Unit(const JobState& job, int unit) const;
  UnitRecord& MutableUnit(const JobState& job, int unit);
  const JobRecord& Job(const JobState& job) const;
  JobRecord& MutableJob(const JobState& job);

  // Writes a node record (registration, status).
  void PutNode(NodeRecord node) { nodes_[node.name] = std::move(node); }
  // A job new to the state, with its units; `queue` too when it is new.
  void AddNewJob(JobState job);
  void PutQueue(QueueRecord queue) { change_.put_queues.push_back(std::move(queue)); }
  void DeleteJob(std::int64_t id) { change_.delete_jobs.push_back(id); }

  // Appends an event; `time_ms` 0 is the commit's time.
  void Event(std::string type, std::string object, std::string message, Tick time_ms = 0);

  // The scheduler should run soon after this commits.
  void RequestSchedule() { reschedule_ = true; }
  bool reschedule() const { return reschedule_; }

  // The change to commit, with every record touched. Call once, before committing.
  const Change& Finish();

  // For ControllerState::Apply.
  std::map<std::int64_t, JobRecord>& jobs() { return jobs_; }
  std::map<std::pair<std::int64_t, int>, UnitRecord>& units() { return units_; }
  std::map<std::int64_t, TaskRecord>& tasks() { return tasks_; }
  std::map<std::string, NodeRecord>& nodes() { return nodes_; }
  std::vector<JobState>& new_jobs() { return new_jobs_; }
  const Change& change() const { return change_; }

 private:
  const ControllerState* state_;
  Change change_;
  std::map<std::int64_t, JobRecord> jobs_;
  std::map<std::pair<std::int64_t, int>, UnitRecord> units_;
  std::map<std::int64_t, TaskRecord> tasks_;
  std::map<std::string, NodeRecord> nodes_;
  std::map<std::int64_t, std::vector<std::int64_t>> added_tasks_;  // by job
  std::vector<JobState> new_jobs_;
  bool reschedule_ = false;
};

// "job/<queue>/<name>", the object of a job's events.
std::string JobObject(const JobRecord& job);

}  // namespace tessera
