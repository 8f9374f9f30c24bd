#include "server/job_phase.h"

#include <array>
#include <utility>

namespace tessera {

namespace api {

namespace {

constexpr std::array<std::pair<JobPhase, std::string_view>, kJobPhaseCount> kJobPhases{{
    {JobPhase::kPending, "Pending"},
    {JobPhase::kRunning, "Running"},
    {JobPhase::kStopping, "Stopping"},
    {JobPhase::kRestarting, "Restarting"},
    {JobPhase::kCancelling, "Cancelling"},
    {JobPhase::kSucceeded, "Succeeded"},
    {JobPhase::kFailed, "Failed"},
    {JobPhase::kCancelled, "Cancelled"},
}};

}  // namespace

std::string_view JobPhaseName(JobPhase phase) {
  for (const auto& [p, name] : kJobPhases) {
    if (p == phase) return name;
  }
  return "Unknown";
}

std::optional<JobPhase> ParseJobPhase(std::string_view name) {
  for (const auto& [p, n] : kJobPhases) {
    if (n == name) return p;
  }
  return std::nullopt;
}

std::string JobPhaseNames() {
  std::string out;
  for (const auto& [p, name] : kJobPhases) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

}  // namespace api

using api::JobPhase;

JobPhase JobPhaseOfUnits(const std::vector<UnitRecord>& units, bool cancel_requested) {
  bool any_running = false, any_stopping = false, restarting = false, all_final = true;
  bool any_failed = false, any_cancelled = false;
  for (const auto& u : units) {
    switch (u.phase) {
      case UnitPhase::kRunning:
        any_running = true;
        all_final = false;
        break;
      case UnitPhase::kStopping:
        any_stopping = true;
        restarting |= u.stop_target == UnitPhase::kPending;
        all_final = false;
        break;
      case UnitPhase::kPending:
        all_final = false;
        break;
      case UnitPhase::kFailed:
        any_failed = true;
        break;
      case UnitPhase::kCancelled:
        any_cancelled = true;
        break;
      case UnitPhase::kSucceeded:
        break;
    }
  }
  if (all_final) {
    if (any_cancelled && cancel_requested) return JobPhase::kCancelled;
    return any_failed ? JobPhase::kFailed : JobPhase::kSucceeded;
  }
  if (cancel_requested) return JobPhase::kCancelling;
  if (any_stopping) return restarting && !any_running ? JobPhase::kRestarting : JobPhase::kStopping;
  if (any_running) return JobPhase::kRunning;
  return JobPhase::kPending;
}

}  // namespace tessera
