// The JSON the API serves for jobs, tasks, nodes and queues, rendered from the controller's
// state. A job's phase is an api::JobPhase (job_phase.h), derived from its units.
//
// Thread-safety: none; called under ControllerCore's mutex.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "server/controller_state.h"
#include "server/job_phase.h"

namespace tessera {

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
nlohmann::json EventJson(const EventRecord& event);

// "%g" of a GPU count, as messages write it.
std::string GpusText(double gpus);

}  // namespace tessera
