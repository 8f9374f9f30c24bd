// What the controller holds in memory: jobs with their units and tasks, registered nodes,
// queues and the recent event log, as last committed to the Store. Changes reach it only
// through ControllerState::Apply, after the store has committed them (change_builder.h).
//
// Thread-safety: none; ControllerCore's mutex guards it (controller_core.h).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/placement.h"
#include "core/workload.h"
#include "sched/quota/queue_tree.h"
#include "server/gpu_usage_feed.h"
#include "server/job_index.h"
#include "server/node_task_log.h"
#include "server/service_scale_state.h"
#include "spec/job_spec.h"
#include "store/records.h"

namespace tessera {

class ChangeBuilder;

// A live resize in progress (server/resize_applier.h): the unit's ranks of `from_attempt` stop,
// and restart at `placement` once they are gone. Durable in its unit's record (UnitRecord::resize,
// ResizeTargetJson), so that a controller restart between the stop and the restart resumes it.
struct ResizeTarget {
  int unit = 0;
  int from_attempt = 0;
  int from_workers = 0;
  Placement placement;             // node ids are looked up again by name in each cycle
  std::vector<std::string> nodes;  // the node of each rank of `placement`
};

// The target as its unit record keeps it, and back (nullopt: empty or unreadable).
std::string ResizeTargetJson(const ResizeTarget& target);
std::optional<ResizeTarget> ResizeTargetFromJson(const std::string& json);

struct JobState {
  JobRecord rec;
  JobSpec spec;
  Workload workload;  // spec.ToWorkload(), built once; what the views describe
  std::vector<UnitRecord> units;
  std::vector<std::int64_t> tasks;  // every attempt, in creation order
  // What the scheduler sees of each unit: the workload with this unit's scheduling id (a
  // BatchJob's task is one unit of one task), its GPU models resolved against the cluster of
  // `resolved_generation`. Immutable once built, so a snapshot may share them outside the lock.
  std::uint32_t first_unit_id = 0;  // scheduling ids first_unit_id .. + units.size() - 1
  std::vector<std::shared_ptr<const Workload>> unit_workloads;
  std::uint64_t resolved_generation = 0;
  // Why it is pending, as of the last cycle (not durable; rendered by the views).
  std::uint64_t never_fits_generation = 0;  // node generation the reason was computed for
  std::optional<std::string> never_fits;
  bool waiting = false;                // in the last snapshot, pending and not bound
  std::string blocked_by;              // unmet spec.dependencies as of the last cycle; empty: none
  std::optional<ResizeTarget> resize;  // a resize in progress (also in its unit's record)
  std::optional<JobFiling> filed;      // where `index` filed it (not durable)
};

struct RegisteredNode {
  NodeRecord rec;
  Tick last_seen = 0;
  bool has_strays = false;  // its agent runs tasks that must stop first

  bool schedulable() const {
    return rec.status == NodeStatus::kReady && !has_strays && !rec.cordoned;
  }
};

struct ControllerState {
  std::map<std::int64_t, JobState> jobs;
  std::map<std::pair<std::string, std::string>, std::int64_t> job_ids;  // (queue, name)
  std::map<std::int64_t, TaskRecord> tasks;
  std::map<std::string, std::set<std::int64_t>> live_by_node;
  // The rendezvous endpoints (master_addr, master_port) of the live tasks, each with how many
  // use it: a new gang's port avoids them (decision_applier.h) without a pass over every task.
  std::map<std::pair<std::string, int>, int> live_endpoints;
  std::map<std::string, RegisteredNode> nodes;
  std::map<std::string, QueueRecord> queues;
  std::deque<EventRecord> events;
  std::set<std::int64_t> active;               // jobs not finished
  JobIndex index;                              // jobs by phase, queue counts (job_index.h)
  std::set<std::int64_t> awaiting_readoption;  // running at load, not yet reported since
  std::set<std::int64_t> resizing;             // jobs with a resize in progress
  std::set<std::int64_t> with_dependencies;    // active jobs whose spec has dependencies
  // The active jobs the autoscale and liveness loops look at every tick, so that neither walks
  // every active job under the lock: autoscaled InferenceServices, jobs with a time limit.
  std::set<std::int64_t> autoscaled;
  std::set<std::int64_t> time_limited;
  // Jobs added, changed or deleted (record, units or tasks) since the scheduling cycle last
  // took them (SchedulingCycle, pending_queue.h); may repeat ids. Not durable. Past
  // kMaxChangedJobs nobody is taking them: the list is dropped and `changed_overflow` set, so
  // that the next taker starts afresh.
  std::vector<std::int64_t> changed_jobs;
  bool changed_overflow = false;
  static constexpr std::size_t kMaxChangedJobs = std::size_t{1} << 22;
  std::map<std::int64_t, ServiceScale> scaling;  // autoscaled services (not durable)
  GpuUsageFeed gpu_usage;                        // from the heartbeats (not durable)
  std::uint64_t node_generation = 1;             // bumped when a node is added or changes shape
  NodeTaskLog node_tasks;  // nodes by when their tasks last changed (delta heartbeats)
  std::int64_t last_free_gpu_milli = 0;  // on schedulable nodes, after the last cycle
  std::int64_t next_job_id = 1;
  std::int64_t next_task_id = 1;
  std::uint32_t next_unit_id = 0;  // scheduling ids (JobState::first_unit_id)
  std::int64_t last_seq = 0;
  std::uint64_t cycles = 0;
  // With a queue tree: the tree of the last cycle, built against the registered capacity.
  std::shared_ptr<const QueueTree> queue_tree;
  // Why the scheduler cannot run now (its queue tree does not fit the registered nodes, or it
  // cannot be built); empty when it can. Shown by /v1/status and /v1/healthz.
  std::string scheduler_problem;
  // Figures for GET /v1/status and the benchmark.
  Tick started_ms = 0;
  Tick load_ms = 0;
  Tick first_decision_ms = -1;  // since start; -1 until the first bind
  std::size_t loaded_jobs = 0;

  std::optional<std::int64_t> FindJob(const std::string& queue, const std::string& name) const;
  // Notes that job `id` changed for the scheduling cycle (changed_jobs).
  void NoteChanged(std::int64_t id);
  // Adds a job loaded or just committed; gives its units their scheduling ids.
  void AddJob(JobState job);
  // Job `id` finished or is gone: out of `active` and the sets of active jobs above.
  void Deactivate(std::int64_t id);
  // Task `task` became live (sign +1) or stopped being live (-1): live_endpoints.
  void CountLiveEndpoint(const TaskRecord& task, int sign);
  // Applies a change the store has committed, with the events as the store numbered them.
  void Apply(ChangeBuilder& change, std::vector<EventRecord> events, std::size_t events_in_memory);
};

}  // namespace tessera
