// The controller's state machine: jobs, their schedulable units and tasks, nodes and the event
// log, kept in memory and made durable through a Store before any change is acknowledged.
//
// Every mutation follows one pattern under one mutex: build a Change, commit it to the store,
// and only when the commit succeeded apply it to memory and wake the waiters (watchers, agents
// long-polling for work, the scheduling loop). A failed commit leaves memory untouched.
//
// Scheduling: RunSchedulingCycle builds a Snapshot of pending and running units and a
// ClusterState from the nodes and the live tasks' GPU claims, calls the same
// Scheduler::Schedule the simulator runs, and commits its binds and preemptions in one change.
//
// Liveness and recovery: a node whose agent has not been heard from for the heartbeat timeout
// is Lost; its live tasks are Lost and their units are requeued (a restart, bounded by
// maxRestarts) or failed. After a restart, everything is loaded from the store and nodes get a
// full timeout to check in; tasks their agents still report running are re-adopted.
//
// Thread-safety: all public methods are thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "sched/scheduler.h"
#include "server/submit_fit.h"
#include "spec/job_spec.h"
#include "spec/protocol.h"
#include "store/store.h"

namespace tessera {

struct ControllerOptions {
  Tick heartbeat_interval_ms = 1000;  // agents' cadence; also their long-poll wait
  Tick heartbeat_timeout_ms = 10000;  // silence after which a node is Lost
  Tick schedule_interval_ms = 1000;   // at most this long between cycles when idle
  Tick min_cycle_gap_ms = 5;          // bursts of changes share a cycle
  SchedulerConfig scheduler;          // queue policy fifo, placement bestfit by default
  // Hierarchical quotas (queue policies drf and drf-naive, and only those): the queue tree as
  // read from `tesserad --queues FILE`. Each cycle schedules with it built against the
  // registered nodes' capacity; jobs must name one of its leaf queues.
  std::optional<QueueTreeSpec> queues;
  std::string queues_source;  // the file, for messages
  std::size_t events_in_memory = 20000;
  std::function<Tick()> now;  // wall clock in ms since the epoch unless set (tests)
};

// Checks options as Controller::Create does (the scheduler's config; the queue tree's shape
// with drf and drf-naive, which need one and are the only ones that take one); returns the
// tree's leaf queues (none without a tree).
Result<std::set<std::string>> CheckControllerOptions(const ControllerOptions& options);

// One error of the API: an Error plus, for specs, the field errors.
struct ApiError {
  Error error;
  std::vector<FieldError> fields;
};
template <typename T>
using ApiResult = std::expected<T, ApiError>;

struct JobFilter {
  std::string queue;      // exact queue, or empty for all
  std::string name;       // exact name, or empty
  std::string phase;      // Pending, Running, ... or empty
  std::size_t limit = 0;  // 0 = no limit
  bool objects = false;   // resubmittable objects (job_object.h) instead of summaries
};

class Controller {
 public:
  // Loads everything from `store` (not owned; must outlive the controller).
  static Result<std::unique_ptr<Controller>> Create(Store* store, ControllerOptions options);
  ~Controller();

  // Starts the scheduling and liveness threads. Stop() ends them (also on destruction).
  void Start();
  void Stop();

  // --- API for users. Each returns JSON ready to serve. ---
  // Validates and durably stores a job from YAML or JSON text; returns the job. A job
  // submitted with `hold` stays Pending (reason Held), skipped by the scheduler, until released.
  // A job that can never fit the registered nodes is refused (FailedPrecondition, with the
  // field: submit_fit.h) unless `queue_anyway`.
  ApiResult<nlohmann::json> Submit(std::string_view text, bool hold = false,
                                   bool queue_anyway = false);
  // Releases held jobs in one commit: each of `names` (in `queue`, or in the only queue that
  // has that name when `queue` is empty), or with `all` every held job (of `queue` if given).
  // All or nothing: an unknown or ambiguous name fails the request and releases none.
  // Returns {"released": [...], "notHeld": [...]} as "queue/name" strings.
  ApiResult<nlohmann::json> Release(const std::string& queue, const std::vector<std::string>& names,
                                    bool all);
  ApiResult<nlohmann::json> GetJob(const std::string& queue, const std::string& name);
  nlohmann::json ListJobs(const JobFilter& filter);
  // Cancels a job: pending units end at once, running ones are stopped (SIGTERM, then SIGKILL
  // after the grace period). `purge` instead deletes a finished job's records.
  ApiResult<nlohmann::json> Cancel(const std::string& queue, const std::string& name);
  ApiResult<nlohmann::json> Purge(const std::string& queue, const std::string& name);
  nlohmann::json ListNodes();
  nlohmann::json ListQueues();
  nlohmann::json ServerStatus();
  // Events with seq > `since`; waits up to `wait_ms` for one when there are none.
  ApiResult<nlohmann::json> Events(std::int64_t since, Tick wait_ms, int limit);

  // Where the log of one task is served: {agentUrl, taskId, state}. `rank` selects the task
  // of the latest attempt (or of `attempt` when > 0).
  struct LogLocation {
    std::string agent_url;
    std::int64_t task_id = 0;
    std::string state;
    bool live = false;
  };
  ApiResult<LogLocation> FindLog(const std::string& queue, const std::string& name, int rank,
                                 int attempt);

  // --- API for agents. ---
  ApiResult<RegistrationReply> Register(const NodeRegistration& reg);
  // Records the agent's view of its tasks and answers with what should run and stop there.
  // When there is nothing new for the agent, waits up to `wait_ms` for something to change.
  ApiResult<HeartbeatReply> Heartbeat(const std::string& node, const HeartbeatRequest& req,
                                      Tick wait_ms);
  // The same for every node one agent process emulates (--simulate-nodes): one commit, one
  // long poll that ends when any of them has news.
  ApiResult<NodesHeartbeatReply> HeartbeatNodes(const NodesHeartbeatRequest& req, Tick wait_ms);
  ApiResult<nlohmann::json> ReportTask(const std::string& node, const TaskReport& report);
  // Several task reports (exits) of the nodes one agent emulates, recorded in one commit; not
  // a full view: tasks it does not mention are left as they are.
  ApiResult<nlohmann::json> ReportTasks(const NodesHeartbeatRequest& reports);

  // --- Loops, exposed for tests. ---
  // One scheduling cycle; returns the number of units bound.
  int RunSchedulingCycle();
  // Marks nodes that missed the heartbeat timeout Lost and recovers their units.
  void CheckLiveness();
  // Stops runs past their spec.timeLimitSeconds (the job fails with reason TimeLimit).
  void EnforceTimeLimits();

 private:
  struct JobState {
    JobRecord rec;
    JobSpec spec;
    Workload workload;  // spec.ToWorkload(), built once; the snapshot points at it
    std::vector<UnitRecord> units;
    std::vector<std::int64_t> tasks;  // every attempt, in creation order
    // Why it is pending, as of the last cycle (not durable; rendered by the views).
    std::uint64_t never_fits_generation = 0;  // node_generation_ the reason was computed for
    std::optional<std::string> never_fits;
    bool waiting = false;    // in the last snapshot, pending and not bound
    std::string blocked_by;  // unmet spec.dependencies as of the last cycle; empty: none
  };
  // A submission waiting for the next group commit.
  struct SubmitRequest {
    JobSpec spec;
    bool hold = false;
    std::optional<ApiResult<nlohmann::json>> result;
  };
  struct NodeState {
    NodeRecord rec;
    Tick last_seen = 0;
    bool has_strays = false;  // its agent runs tasks that must stop first
  };
  // A Change under construction plus the memory updates it implies.
  struct Pending;

  explicit Controller(Store* store, ControllerOptions options);
  // Commits a batch of submissions in one transaction (one fsync), falling back to one at a
  // time when the batch fails; returns a result per request, in order.
  std::vector<ApiResult<nlohmann::json>> CommitSubmissions(
      const std::vector<std::shared_ptr<SubmitRequest>>& batch);
  // Adds one new job to `p`; `id` is its id.
  void AddJobLocked(const JobSpec& spec, bool hold, std::int64_t id, Pending& p,
                    std::set<std::string>& new_queues);
  Tick Now() const { return options_.now(); }
  // The registered nodes as a Cluster (cached until a node is added or changes shape).
  std::shared_ptr<const Cluster> RegisteredClusterLocked();
  Status LoadLocked();

  // Commits `p` and applies it to memory; wakes waiters.
  Status CommitLocked(Pending& p);

  // Handlers of state changes; each adds to `p`.
  void OnReportLocked(NodeState& node, const TaskReport& r, Pending& p);
  void EvaluateUnitLocked(JobState& job, int unit, Pending& p);
  void StopUnitLocked(JobState& job, int unit, UnitPhase target, const std::string& why,
                      Pending& p);
  void FinishJobIfDoneLocked(JobState& job, Pending& p);
  // Holds back jobs whose dependencies are not met; fails those whose never can be.
  void ApplyDependenciesLocked();
  bool RecordHeartbeatLocked(NodeState& node, const HeartbeatRequest& req, Pending& p);
  HeartbeatReply ReplyForLocked(const std::string& node, const HeartbeatRequest& req, bool* news);
  TaskLaunch LaunchOfLocked(const TaskRecord& t) const;
  // The nodes of `t`'s gang in rank order, comma-separated (TESSERA_NODES).
  std::string GangNodesLocked(const JobState& job, const TaskRecord& t) const;

  // Views.
  std::string JobPhaseOf(const JobState& job) const;
  nlohmann::json JobSummaryLocked(const JobState& job) const;
  nlohmann::json JobDetailLocked(const JobState& job) const;
  nlohmann::json TaskJsonLocked(const TaskRecord& t) const;
  std::optional<std::int64_t> FindJobLocked(const std::string& queue,
                                            const std::string& name) const;

  void SchedulerLoop();
  void LivenessLoop();

  Store* store_;
  ControllerOptions options_;

  mutable std::mutex mu_;
  std::condition_variable changed_;  // any commit
  std::condition_variable wake_scheduler_;
  std::condition_variable wake_liveness_;  // only on Stop()
  bool schedule_requested_ = true;
  bool stopping_ = false;
  std::thread scheduler_thread_;
  std::thread liveness_thread_;

  std::map<std::int64_t, JobState> jobs_;
  std::map<std::pair<std::string, std::string>, std::int64_t> job_ids_;  // (queue, name)
  std::map<std::int64_t, TaskRecord> tasks_;
  std::map<std::string, std::set<std::int64_t>> live_by_node_;
  std::map<std::string, NodeState> nodes_;
  std::map<std::string, QueueRecord> queues_;
  std::deque<EventRecord> events_;
  std::set<std::int64_t> active_;         // jobs not finished
  std::uint64_t node_generation_ = 1;     // bumped when a node is added or changes shape
  std::int64_t last_free_gpu_milli_ = 0;  // on schedulable nodes, after the last cycle
  // With options_.queues: the tree of the last cycle (rebuilt when the capacity changes), the
  // leaf queues jobs may name, and why the tree cannot be built now (said once per change).
  std::shared_ptr<const QueueTree> queue_tree_;
  std::set<std::string> leaf_queues_;
  std::string queue_tree_problem_;
  SubmitFitCluster fit_cluster_;  // the registered nodes, for the fit check at submit

  // Group commit of submissions: the first waiting submitter commits for everyone queued.
  std::mutex submit_mu_;
  std::condition_variable submit_cv_;
  std::vector<std::shared_ptr<SubmitRequest>> submit_queue_;
  bool submit_leader_ = false;
  std::set<std::int64_t> awaiting_readoption_;  // running at load, not yet reported since
  std::int64_t next_job_id_ = 1;
  std::int64_t next_task_id_ = 1;
  std::int64_t last_seq_ = 0;
  std::uint64_t cycles_ = 0;
  std::uint64_t port_salt_ = 0;  // spreads rendezvous ports per controller start

  // Figures for GET /v1/status and the benchmark.
  Tick started_ms_ = 0;
  Tick load_ms_ = 0;
  Tick first_decision_ms_ = -1;  // since start; -1 until the first bind
  std::size_t loaded_jobs_ = 0;
};

}  // namespace tessera
