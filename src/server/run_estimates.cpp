#include "server/run_estimates.h"

#include <algorithm>
#include <map>

#include "core/resources.h"

namespace tessera {

UnitHistory HistoryOf(const ControllerState& state, const JobState& job, const UnitRecord& unit) {
  UnitHistory out;
  // Only a unit that ran before its current attempt has a history: skip the task scan.
  const int current = unit.phase == UnitPhase::kRunning ? unit.attempt : unit.attempt + 1;
  if (current <= 1) return out;
  std::map<int, std::pair<Tick, Tick>> runs;  // attempt → (first start, last exit)
  for (auto tid : job.tasks) {
    const TaskRecord& t = state.tasks.at(tid);
    if (t.unit != unit.unit || t.attempt >= current || t.started_ms == 0) continue;
    const Tick end = std::max(t.finished_ms, t.started_ms);
    auto [it, added] = runs.try_emplace(t.attempt, t.started_ms, end);
    if (!added) {
      it->second.first = std::min(it->second.first, t.started_ms);
      it->second.second = std::max(it->second.second, end);
    }
    const double gpus = static_cast<double>(t.gpus.size()) * t.gpu_milli / kMilliPerGpu;
    out.gpu_seconds += gpus * ToSeconds(end - t.started_ms);
  }
  for (const auto& [attempt, run] : runs) out.ran_ms += run.second - run.first;
  return out;
}

Tick EstimatedRemaining(const JobSpec& spec, const UnitRecord& unit, const UnitHistory& before,
                        Tick now) {
  const bool running = unit.phase == UnitPhase::kRunning;
  const Tick this_run = running ? std::max<Tick>(0, now - unit.started_ms) : 0;
  std::optional<Tick> left;  // unknown
  if (spec.expected_duration_seconds > 0)
    left = spec.expected_duration_seconds * kSecond - before.ran_ms - this_run;
  if (spec.time_limit_seconds > 0) {
    const Tick by_limit = spec.time_limit_seconds * kSecond - this_run;
    left = left ? std::min(*left, by_limit) : by_limit;
  }
  if (!left) return 0;
  return std::max<Tick>(1, *left);  // overdue: about to end (0 would read as unknown)
}

bool NeedsRunTimeEstimate(const std::string& queue_policy) {
  return queue_policy == "srtf" || queue_policy == "srsf";
}

std::optional<FieldError> MissingEstimate(const JobSpec& spec, const std::string& queue_policy) {
  if (!NeedsRunTimeEstimate(queue_policy) || spec.expected_duration_seconds > 0 ||
      spec.time_limit_seconds > 0) {
    return std::nullopt;
  }
  return FieldError{"spec.expectedDurationSeconds",
                    "queue policy '" + queue_policy +
                        "' orders jobs by their remaining run time, and this job gives none: "
                        "set spec.expectedDurationSeconds (or spec.timeLimitSeconds)"};
}

}  // namespace tessera
