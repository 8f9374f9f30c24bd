// The rows the controller keeps durably: queues, jobs (their spec as canonical JSON), the
// schedulable units of each job, tasks (one process group on one node, with the GPUs it
// holds), nodes, and the append-only event log. Plain values; the Store commits them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/time.h"

namespace tessera {

// A unit is what the scheduler places all-or-nothing: the whole gang for most kinds, one task
// for a BatchJob. Its phase moves Pending -> Running -> (Stopping ->) an end, or back to
// Pending when it is requeued (failure with restarts left, lost node, preemption).
enum class UnitPhase { kPending, kRunning, kStopping, kSucceeded, kFailed, kCancelled };
std::string_view UnitPhaseName(UnitPhase p);
bool ParseUnitPhase(std::string_view s, UnitPhase* out);
inline bool IsFinal(UnitPhase p) {
  return p == UnitPhase::kSucceeded || p == UnitPhase::kFailed || p == UnitPhase::kCancelled;
}

// A task: Assigned (bound, not yet started) -> Running -> Succeeded | Failed, or Stopping ->
// Stopped, or Lost with its node. A task holds its GPUs while it is live (Assigned, Running,
// Stopping): the store's constraints make a second live claim on a GPU impossible.
enum class TaskState { kAssigned, kRunning, kStopping, kSucceeded, kFailed, kStopped, kLost };
std::string_view TaskStateName(TaskState s);
bool ParseTaskState(std::string_view s, TaskState* out);
inline bool IsLive(TaskState s) {
  return s == TaskState::kAssigned || s == TaskState::kRunning || s == TaskState::kStopping;
}

enum class NodeStatus { kReady, kNotReady, kLost };
std::string_view NodeStatusName(NodeStatus s);
bool ParseNodeStatus(std::string_view s, NodeStatus* out);

struct QueueRecord {
  std::string name;
  Tick created_ms = 0;
};

struct JobRecord {
  std::int64_t id = 0;
  std::string queue;
  std::string name;
  std::string kind;
  std::string spec_json;  // canonical JSON of the JobSpec
  Tick submit_ms = 0;
  bool cancel_requested = false;
  // Submitted held (`tessera submit --hold`): pending, skipped by the scheduler until released.
  bool held = false;
  Tick finished_ms = 0;  // 0 while not finished
  std::string message;
};

struct UnitRecord {
  std::int64_t job_id = 0;
  int unit = 0;
  UnitPhase phase = UnitPhase::kPending;
  UnitPhase stop_target = UnitPhase::kPending;  // kStopping: the phase it goes to once stopped
  int attempt = 0;                              // increments on every (re)start
  int restarts = 0;  // restarts after failures and lost nodes (bounded by maxRestarts)
  Tick pending_since_ms = 0;
  Tick started_ms = 0;
  Tick first_started_ms = 0;
  Tick finished_ms = 0;
  int exit_code = 0;
  std::string message;
  // An elastic resize in progress (the controller's ResizeTarget as JSON; empty: none), kept so
  // that a resize survives a controller restart between its stop and its restart.
  std::string resize;
};

struct TaskRecord {
  std::int64_t id = 0;
  std::int64_t job_id = 0;
  int unit = 0;
  int attempt = 0;
  int rank = 0;
  std::string node;
  std::vector<int> gpus;  // GPU indices on the node
  std::int32_t gpu_milli = 1000;
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;
  TaskState state = TaskState::kAssigned;
  int exit_code = 0;
  int signal = 0;
  int pid = 0;
  Tick created_ms = 0;
  Tick started_ms = 0;
  Tick finished_ms = 0;
  std::string message;
  std::string master_addr;
  int master_port = 0;
  // Placed on online replicas' unused GPU by co-location (sched/colocation/oversell.h): its GPU
  // share is lent, not owned, so it holds no GPU claim in the store.
  bool oversold = false;
};

// The GPU milli per GPU a task claims in the store: none for an oversold task.
inline std::int32_t ClaimedGpuMilli(const TaskRecord& t) { return t.oversold ? 0 : t.gpu_milli; }

struct NodeRecord {
  std::string name;
  std::string address;
  std::string agent_url;
  std::string gpu_model;
  int gpu_count = 0;
  bool simulated = false;
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;
  std::string gpus_json;             // per-GPU details as reported by the agent
  std::string topology_json = "{}";  // {LEVEL: DOMAIN}: where the node sits, as registered
  bool cordoned = false;  // by the operator (tessera cordon/drain): no new work lands on it
  NodeStatus status = NodeStatus::kNotReady;
  Tick registered_ms = 0;
  std::string version;
  std::string message;
};

// A node's agent credential, as its SHA-256 digest (the secret itself is never stored): kept by
// the store so that a restarted or newly elected controller still knows every node.
struct NodeCredentialRecord {
  std::string node;
  std::string digest;  // 64 hex digits
};

struct EventRecord {
  std::int64_t seq = 0;  // assigned by the store, strictly increasing
  Tick time_ms = 0;
  std::string type;    // JobSubmitted, TaskStarted, NodeLost, ...
  std::string object;  // "job/<queue>/<name>", "node/<name>", "task/<id>"
  std::string message;
};

// Everything a controller needs to recover after a restart.
struct StoreContents {
  std::vector<QueueRecord> queues;
  std::vector<JobRecord> jobs;
  std::vector<UnitRecord> units;
  std::vector<TaskRecord> tasks;
  std::vector<NodeRecord> nodes;
  std::int64_t last_event_seq = 0;
};

// One atomic change: all of it is committed, or none of it.
struct Change {
  std::vector<QueueRecord> put_queues;
  std::vector<JobRecord> put_jobs;        // insert or update by id; (queue, name) must stay unique
  std::vector<std::int64_t> delete_jobs;  // with their units and tasks; none may be live
  std::vector<UnitRecord> put_units;
  std::vector<TaskRecord> put_tasks;  // live tasks claim their GPUs; ended ones release them
  std::vector<NodeRecord> put_nodes;
  std::vector<NodeCredentialRecord> put_node_credentials;  // insert or replace by node
  std::vector<EventRecord> events;  // appended; seq and (when 0) time are filled in

  bool empty() const {
    return put_queues.empty() && put_jobs.empty() && delete_jobs.empty() && put_units.empty() &&
           put_tasks.empty() && put_nodes.empty() && put_node_credentials.empty() && events.empty();
  }
};

}  // namespace tessera
