// The JSON the API serves for jobs, tasks, nodes and queues, rendered from the controller's
// state. A job's phase is an api::JobPhase, derived from its units; its name is what the API
// shows and filters on (`GET /v1/jobs?phase=Running`).
//
// Thread-safety: none; called under ControllerCore's mutex.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "server/controller_state.h"

namespace tessera {

namespace api {

// A job's phase as users see it (the scheduler's own JobPhase is only pending or running).
enum class JobPhase {
  kPending,     // no unit running (waiting, held, or requeued and stopped)
  kRunning,     // some unit running, none stopping
  kStopping,    // some unit being stopped (preempted, failing) while others may run
  kRestarting,  // every live unit stopping to be requeued, none running
  kCancelling,  // cancel requested, not every task stopped yet
  kSucceeded,
  kFailed,
  kCancelled,
};

std::string_view JobPhaseName(JobPhase phase);
std::optional<JobPhase> ParseJobPhase(std::string_view name);
// "Pending, Running, ...": for error messages.
std::string JobPhaseNames();

}  // namespace api

api::JobPhase JobPhaseOf(const JobState& job);

// An InferenceService replica's base URL, http://<node address>:<master port + rank>: where
// the gateway and the autoscaler find it (the node's registered address, else the task's).
std::string ReplicaEndpoint(const ControllerState& state, const TaskRecord& task);
nlohmann::json TaskJson(const ControllerState& state, const TaskRecord& task);
// A job as `get jobs` lists it: phase, counts, times, and why it is pending.
nlohmann::json JobSummary(const ControllerState& state, const JobState& job);
// The summary plus spec, units, every task and the job's events held in memory.
nlohmann::json JobDetail(const ControllerState& state, const JobState& job);
nlohmann::json NodesView(const ControllerState& state, Tick now);
// The rows of GET /v1/queues (queue_view.h): `tree` as configured (null without one),
// `capacity` the registered nodes'.
nlohmann::json QueuesView(const ControllerState& state, const QueueTreeSpec* tree,
                          const Resources& capacity);
nlohmann::json EventJson(const EventRecord& event);

// "%g" of a GPU count, as messages write it.
std::string GpusText(double gpus);

}  // namespace tessera
