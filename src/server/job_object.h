// A job as an object that can be submitted again, as `kubectl get -o yaml` prints one:
// apiVersion, kind, metadata and spec in the canonical form of JobSpecToJson, and status with
// what the controller reports (the fields of the job summary under their own names: id, phase,
// reason, message, tasks, runningTasks, gpus, attempt, restarts, maxRestarts, priority,
// submitTimeMs, startTimeMs, finishTimeMs). The spec parser ignores `status`, so the object
// read back by `tessera submit -f` is the same job (GET /v1/jobs?view=object).
#pragma once

#include <nlohmann/json.hpp>

#include "spec/job_spec.h"

namespace tessera {

// `summary`: the job's summary as the API lists it (its name, queue, kind and user are the
// metadata's and the kind's, and are not repeated under status).
nlohmann::json ResubmittableJob(const JobSpec& spec, const nlohmann::json& summary);

}  // namespace tessera
