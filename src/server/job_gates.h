// What holds a job back or stops it, apart from capacity: its dependencies (spec.dependencies,
// Slurm's afterok and afterany) and its wall-time limit (spec.timeLimitSeconds). Pure rules;
// the controller applies them each scheduling cycle and liveness tick (docs/imported-specs.md).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/time.h"
#include "spec/job_spec.h"
#include "store/records.h"

namespace tessera {

// Why a job failed, as its `reason`: the word before the first ':' of its message.
inline constexpr std::string_view kReasonTimeLimit = "TimeLimit";
inline constexpr std::string_view kReasonDependencyNeverSatisfied = "DependencyNeverSatisfied";
// The reason of a failure message made by the rules below, or nullopt for any other message.
std::optional<std::string> FailureReasonOf(std::string_view message);

struct DependencyGate {
  enum class State { kMet, kWaiting, kNeverSatisfied };
  State state = State::kMet;
  std::string message;  // kWaiting: what it waits for; kNeverSatisfied: the failure message
};

// The phase of another job (Pending, Running, Succeeded, Failed, Cancelled, ...), or nullopt
// when there is no such job (purged).
using JobPhaseLookup = std::function<std::optional<std::string>(const JobDependency&)>;

// afterok is met once the job Succeeded and can never be once it ended otherwise (or was
// purged, its outcome unknown); afterany is met once the job ended, however (or was purged).
DependencyGate CheckDependencies(const std::vector<JobDependency>& dependencies,
                                 const JobPhaseLookup& phase_of);

// A message naming the first dependency of `spec` that `exists` says is not there (they must
// be submitted first, as sbatch refuses a dependency on an unknown job), or nullopt.
std::optional<std::string> MissingDependency(
    const JobSpec& spec, const std::function<bool(const JobDependency&)>& exists);

// How many more of a BatchJob's tasks may start now under spec.parallelism (a large number
// when there is no cap; running and stopping tasks count against it).
int FreeParallelismSlots(const JobSpec& spec, const std::vector<UnitRecord>& units);

// The failure message of a run that started at `started_ms` and is still going at `now` past
// a limit of `limit_seconds` (0: none); nullopt while within it.
std::optional<std::string> TimeLimitExceeded(int limit_seconds, Tick started_ms, Tick now);

}  // namespace tessera
