// A job's phase as users see it (the scheduler's own JobPhase is only pending or running),
// derived from its units: what the API shows and filters on (`GET /v1/jobs?phase=Running`),
// and what the job index files jobs under (job_index.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/records.h"

namespace tessera {

namespace api {

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
inline constexpr int kJobPhaseCount = 8;

std::string_view JobPhaseName(JobPhase phase);
std::optional<JobPhase> ParseJobPhase(std::string_view name);
// "Pending, Running, ...": for error messages.
std::string JobPhaseNames();

}  // namespace api

// The phase of a job of these units, cancelled or not.
api::JobPhase JobPhaseOfUnits(const std::vector<UnitRecord>& units, bool cancel_requested);

}  // namespace tessera
