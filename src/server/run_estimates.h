// What the queue orders that need run times know about a live unit (docs/queue-policies.md):
// its remaining run time by its owner's estimate, for backfill, srtf and srsf
// (JobView::remaining), and the GPU-time its earlier runs received, for las
// (JobView::attained_gpu_seconds). The policies themselves are the simulator's (src/sched/).
//
// Pure: no clock, lock or I/O. Thread-safety: none; the state is read under ControllerCore's
// mutex.
#pragma once

#include <optional>
#include <string>

#include "core/time.h"
#include "server/controller_state.h"

namespace tessera {

// What a unit's earlier runs (attempts before the running one) took.
struct UnitHistory {
  Tick ran_ms = 0;         // wall time, first start to last exit of each run, summed
  double gpu_seconds = 0;  // GPU-time received
};
UnitHistory HistoryOf(const ControllerState& state, const JobState& job, const UnitRecord& unit);

// The run time left of `unit` at `now`, 0 = unknown. spec.expectedDurationSeconds is the whole
// run time (what earlier runs did is counted as done); spec.timeLimitSeconds bounds each run
// (it is enforced), so it is the expected end of a run when nothing better is known, as Slurm's
// backfill reads a job's time limit.
Tick EstimatedRemaining(const JobSpec& spec, const UnitRecord& unit, const UnitHistory& before,
                        Tick now);

// Queue policies that order jobs by an estimate of their run time (srtf, srsf).
bool NeedsRunTimeEstimate(const std::string& queue_policy);

// Why a job cannot be submitted under `queue_policy` (it carries no estimate the policy needs),
// or nullopt.
std::optional<FieldError> MissingEstimate(const JobSpec& spec, const std::string& queue_policy);

}  // namespace tessera
