// The controller's side of the rules in job_gates.h: each scheduling cycle holds back jobs
// whose dependencies are not met and fails those whose never can be; each liveness tick
// stops runs past their time limit. Also the gang's node list a task is told (TESSERA_NODES).
#pragma once

#include <string>

#include "server/controller_core.h"

namespace tessera {

// Sets each active job's blocked_by and commits the failure (reason DependencyNeverSatisfied)
// of jobs whose afterok dependency can no longer succeed. REQUIRES: mu held.
void ApplyDependenciesLocked(ControllerCore& core);

// Stops every run past its spec.timeLimitSeconds as cancel stops it; the unit fails with
// reason TimeLimit once its tasks are gone. Takes mu.
void EnforceTimeLimits(ControllerCore& core);

// The nodes of `task`'s gang, in rank order, comma-separated (a BatchJob task: its own node).
std::string GangNodes(const ControllerState& state, const JobState& job, const TaskRecord& task);

}  // namespace tessera
