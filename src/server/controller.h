// The controller: jobs, their schedulable units and tasks, nodes and the event log, kept in
// memory and made durable through a Store before any change is acknowledged. This class wires
// its parts together and runs the scheduling and liveness loops:
//
//   controller_core.h    the state, its one mutex, and the commit (store first, then memory)
//   change_builder.h     the change being built and committed
//   unit_lifecycle.h     the unit and task state machine
//   user_api.h           the API for users (submit, release, cancel, purge, views, events)
//   agent_service.h      the agent protocol and node liveness (lost nodes, recovery)
//   job_views.h          the JSON of jobs (over api::JobPhase), tasks, nodes and queues
//   scheduling_cycle.h   snapshot under the lock, Schedule() outside it, apply under it
//   snapshot_builder.h   the pure snapshot of the state
//   decision_applier.h   decisions to changes, dropping those whose subject changed meanwhile
//   live_scheduler.h     the one long-lived Scheduler, rebuilt when its queue tree changes
//
// Liveness and recovery: a node whose agent has not been heard from for the heartbeat timeout
// is Lost; its live tasks are Lost and their units are requeued (a restart, bounded by
// maxRestarts) or failed. After a restart, everything is loaded from the store and nodes get a
// full timeout to check in; tasks their agents still report running are re-adopted.
//
// Thread-safety: all public methods are thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <thread>

#include "server/agent_service.h"
#include "server/controller_core.h"
#include "server/controller_options.h"
#include "server/metrics_view.h"
#include "server/node_operations.h"
#include "server/scheduling_cycle.h"
#include "server/service_signals.h"
#include "server/user_api.h"

namespace tessera {

class Controller {
 public:
  // Loads everything from `store` (not owned; must outlive the controller).
  static Result<std::unique_ptr<Controller>> Create(Store* store, ControllerOptions options);
  ~Controller();

  // Starts the scheduling and liveness threads. Stop() ends them (also on destruction).
  void Start();
  void Stop();

  // The parts, for the HTTP layer and tests.
  UserApi& users() { return users_; }
  AgentService& agents() { return agents_; }

  // --- API for users (user_api.h). ---
  ApiResult<nlohmann::json> Submit(std::string_view text, bool hold = false,
                                   bool queue_anyway = false) {
    return users_.Submit(text, hold, queue_anyway);
  }
  ApiResult<nlohmann::json> Submit(JobSpec spec, bool hold, bool queue_anyway) {
    return users_.Submit(std::move(spec), hold, queue_anyway);
  }
  ApiResult<nlohmann::json> Release(const std::string& queue, const std::vector<std::string>& names,
                                    bool all) {
    return users_.Release(queue, names, all);
  }
  ApiResult<nlohmann::json> GetJob(const std::string& queue, const std::string& name) {
    return users_.GetJob(queue, name);
  }
  JobPage ListJobs(const JobFilter& filter) { return users_.ListJobs(filter); }
  ApiResult<nlohmann::json> Cancel(const std::string& queue, const std::string& name) {
    return users_.Cancel(queue, name);
  }
  ApiResult<nlohmann::json> Purge(const std::string& queue, const std::string& name) {
    return users_.Purge(queue, name);
  }
  nlohmann::json ListNodes() { return users_.ListNodes(); }
  // tessera cordon / uncordon / drain NODE (node_operations.h).
  ApiResult<nlohmann::json> OperateNode(const std::string& node, NodeOperation op) {
    return node_ops_.Apply(node, op);
  }
  nlohmann::json ListQueues() { return users_.ListQueues(); }
  nlohmann::json ServerStatus() { return users_.ServerStatus(); }
  // Every controller of the cluster and which one leads (ControllerOptions::controllers).
  nlohmann::json Controllers() {
    return core_.options().controllers ? core_.options().controllers() : nlohmann::json::array();
  }
  // {"ok": true}, with "schedulerError" when the scheduler cannot run as configured; ok false
  // with "storeError" while the store cannot commit.
  nlohmann::json Health();
  // GET /metrics: the Prometheus text (metrics_view.h).
  std::string MetricsText() { return metrics_view_.Text(); }
  // Gathers the node gauges /metrics serves now (tesserad's liveness loop does so each second).
  void RefreshMetrics() { metrics_view_.Refresh(); }
  ControllerMetrics& metrics() { return core_.metrics; }
  // The sequence number of the last event: what a parked /v1/events long-poll waits beyond.
  // Without the controller's lock.
  std::int64_t LastEventSeq();
  // Called (with the controller's lock held: it must not block or call back) after every
  // commit; null to stop. The HTTP front end releases parked long-polls on it.
  void SetCommitListener(std::function<void()> listener);
  ApiResult<nlohmann::json> Events(std::int64_t since, Tick wait_ms, int limit) {
    return users_.Events(since, wait_ms, limit);
  }
  // GET /v1/export: jobs with their specs, tasks, nodes, the queue tree and the events
  // (live_export.h).
  ApiResult<nlohmann::json> Export();
  ApiResult<LogLocation> FindLog(const std::string& queue, const std::string& name, int rank,
                                 int attempt) {
    return users_.FindLog(queue, name, rank, attempt);
  }

  // --- API for agents (agent_service.h). ---
  ApiResult<RegistrationReply> Register(const NodeRegistration& reg) {
    return agents_.Register(reg);
  }
  ApiResult<HeartbeatReply> Heartbeat(const std::string& node, const HeartbeatRequest& req,
                                      Tick wait_ms) {
    return agents_.Heartbeat(node, req, wait_ms);
  }
  ApiResult<NodesHeartbeatReply> HeartbeatNodes(const NodesHeartbeatRequest& req, Tick wait_ms) {
    return agents_.HeartbeatNodes(req, wait_ms);
  }
  ApiResult<nlohmann::json> ReportTask(const std::string& node, const TaskReport& report) {
    return agents_.ReportTask(node, report);
  }
  ApiResult<nlohmann::json> ReportTasks(const NodesHeartbeatRequest& reports) {
    return agents_.ReportTasks(reports);
  }

  // --- Loops, exposed for tests. ---
  // One scheduling cycle; returns the number of units bound.
  int RunSchedulingCycle() { return cycle_.Run(); }
  // Marks nodes that missed the heartbeat timeout Lost and recovers their units.
  void CheckLiveness() { agents_.CheckLiveness(); }
  // One autoscale tick: reads the autoscaled services' signals, scales and drains.
  void RunAutoscaleTick(SignalReader& reader);

 private:
  Controller(Store* store, ControllerOptions options, std::set<std::string> leaf_queues);

  void SchedulerLoop();
  void LivenessLoop();
  void AutoscaleLoop();

  ControllerCore core_;
  UserApi users_;
  AgentService agents_;
  NodeOperations node_ops_;
  SchedulingCycle cycle_;
  MetricsView metrics_view_;
  std::thread scheduler_thread_;
  std::thread liveness_thread_;
  std::thread autoscale_thread_;
};

}  // namespace tessera
