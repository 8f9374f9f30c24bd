// Reports one applied scheduling cycle to the controller's metrics (controller_metrics.h):
// every decision by kind, the preemption victims, and the submit-to-bind latency of each unit
// the cycle bound. Called at one point, after the cycle's change is committed, so that every
// kind of decision the scheduler makes is counted however it is applied.
//
// Thread-safety: none; runs under ControllerCore's mutex.
#pragma once

#include "server/controller_core.h"
#include "server/decision_applier.h"
#include "server/snapshot_builder.h"

namespace tessera {

void RecordDecisionMetricsLocked(ControllerCore& core, const CycleSnapshot& snapshot,
                                 const Decisions& decisions, const AppliedDecisions& applied,
                                 Tick now);

}  // namespace tessera
