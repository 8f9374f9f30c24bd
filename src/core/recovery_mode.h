// How a live gang is recovered after it lost a node (or its node was drained): the recovery
// policies of src/sched/recovery/ the controller runs, by name. Chosen per controller
// (`tesserad --recovery`) and per job (`spec.recovery` of a TrainingJob).
#pragma once

#include <optional>
#include <string_view>

namespace tessera {

enum class RecoveryMode {
  kRequeue,  // the whole gang back to the queue; the scheduler places it again
  kReplace,  // healthy ranks restart where they ran; lost ranks move to free nodes nearby
  kSpares,   // as replace, taking the idle spare nodes kept per topology domain first
};

inline std::string_view RecoveryModeName(RecoveryMode m) {
  switch (m) {
    case RecoveryMode::kRequeue:
      return "requeue";
    case RecoveryMode::kReplace:
      return "replace";
    case RecoveryMode::kSpares:
      return "spares";
  }
  return "requeue";
}

inline std::optional<RecoveryMode> ParseRecoveryMode(std::string_view s) {
  if (s == "requeue") return RecoveryMode::kRequeue;
  if (s == "replace") return RecoveryMode::kReplace;
  if (s == "spares") return RecoveryMode::kSpares;
  return std::nullopt;
}

inline constexpr std::string_view kRecoveryModeNames = "requeue, replace, spares";

}  // namespace tessera
