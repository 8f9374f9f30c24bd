// The unit and task state machine: what a task report, a stop request or the end of a unit's
// last task does to the unit and its job. A unit runs Pending -> Running -> (Stopping ->) an
// end, or back to Pending when requeued (failure with restarts left, lost node, preemption);
// a job finishes when its last unit does. Each function only adds to a ChangeBuilder.
//
// Thread-safety: none; called under ControllerCore's mutex.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "server/change_builder.h"
#include "spec/protocol.h"

namespace tessera {

// Stops a running (or stopping) unit's live tasks, to end in `target` once they are gone. A
// cancel overrides a pending restart; a restart never overrides a cancel.
void StopUnit(ChangeBuilder& change, const JobState& job, int unit, UnitPhase target,
              const std::string& why, Tick now);

// Moves a unit on from what its tasks of the current attempt are now: a failed or lost task
// restarts the gang (within maxRestarts) or fails it; all succeeded ends it; a stopping unit
// with no live task reaches its stop target.
void EvaluateUnit(ChangeBuilder& change, const JobState& job, int unit, Tick now);

// Ends the job when every unit has ended.
void FinishJobIfDone(ChangeBuilder& change, const JobState& job, Tick now);

// Records one task report of `node`'s agent. Reports about tasks that are not this node's, or
// that ended already, are ignored (strays). A running report of a task loaded as running after
// a restart re-adopts it (erased from `awaiting_readoption`, not durable).
void RecordTaskReport(ChangeBuilder& change, const std::string& node, const TaskReport& report,
                      Tick now, std::set<std::int64_t>& awaiting_readoption);

// "0,1,3": GPU indices for messages.
std::string GpuList(const std::vector<int>& gpus);

}  // namespace tessera
