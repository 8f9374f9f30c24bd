#include "store/records.h"

#include <array>
#include <utility>

namespace tessera {

namespace {

template <typename E, std::size_t N>
std::string_view NameOf(const std::array<std::pair<E, std::string_view>, N>& names, E value) {
  for (const auto& [v, n] : names) {
    if (v == value) return n;
  }
  return "Unknown";
}

template <typename E, std::size_t N>
bool Parse(const std::array<std::pair<E, std::string_view>, N>& names, std::string_view s, E* out) {
  for (const auto& [v, n] : names) {
    if (n == s) {
      *out = v;
      return true;
    }
  }
  return false;
}

constexpr std::array<std::pair<UnitPhase, std::string_view>, 6> kUnitPhases{{
    {UnitPhase::kPending, "Pending"},
    {UnitPhase::kRunning, "Running"},
    {UnitPhase::kStopping, "Stopping"},
    {UnitPhase::kSucceeded, "Succeeded"},
    {UnitPhase::kFailed, "Failed"},
    {UnitPhase::kCancelled, "Cancelled"},
}};

constexpr std::array<std::pair<TaskState, std::string_view>, 7> kTaskStates{{
    {TaskState::kAssigned, "Assigned"},
    {TaskState::kRunning, "Running"},
    {TaskState::kStopping, "Stopping"},
    {TaskState::kSucceeded, "Succeeded"},
    {TaskState::kFailed, "Failed"},
    {TaskState::kStopped, "Stopped"},
    {TaskState::kLost, "Lost"},
}};

constexpr std::array<std::pair<NodeStatus, std::string_view>, 3> kNodeStatuses{{
    {NodeStatus::kReady, "Ready"},
    {NodeStatus::kNotReady, "NotReady"},
    {NodeStatus::kLost, "Lost"},
}};

}  // namespace

std::string_view UnitPhaseName(UnitPhase p) { return NameOf(kUnitPhases, p); }
bool ParseUnitPhase(std::string_view s, UnitPhase* out) { return Parse(kUnitPhases, s, out); }
std::string_view TaskStateName(TaskState s) { return NameOf(kTaskStates, s); }
bool ParseTaskState(std::string_view s, TaskState* out) { return Parse(kTaskStates, s, out); }
std::string_view NodeStatusName(NodeStatus s) { return NameOf(kNodeStatuses, s); }
bool ParseNodeStatus(std::string_view s, NodeStatus* out) { return Parse(kNodeStatuses, s, out); }

}  // namespace tessera
