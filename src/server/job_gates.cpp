#include "server/job_gates.h"

#include <algorithm>
#include <limits>

namespace tessera {

namespace {

bool Ended(const std::string& phase) {
  return phase == "Succeeded" || phase == "Failed" || phase == "Cancelled";
}

std::string Name(const JobDependency& d) { return d.queue + "/" + d.name; }

}  // namespace

std::optional<std::string> FailureReasonOf(std::string_view message) {
  for (std::string_view reason : {kReasonTimeLimit, kReasonDependencyNeverSatisfied}) {
    if (message.size() > reason.size() && message.starts_with(reason) &&
        message[reason.size()] == ':') {
      return std::string(reason);
    }
  }
  return std::nullopt;
}

DependencyGate CheckDependencies(const std::vector<JobDependency>& dependencies,
                                 const JobPhaseLookup& phase_of) {
  DependencyGate gate;
  for (const auto& d : dependencies) {
    const auto phase = phase_of(d);
    const std::string type(DependencyTypeName(d.type));
    if (d.type == DependencyType::kAfterOk) {
      if (phase == "Succeeded") continue;
      if (!phase || Ended(*phase)) {
        return {DependencyGate::State::kNeverSatisfied,
                std::string(kReasonDependencyNeverSatisfied) + ": " + type + " job " + Name(d) +
                    (phase ? " ended " + *phase : " no longer exists (purged)") +
                    "; this job will never run"};
      }
    } else if (!phase || Ended(*phase)) {
      continue;
    }
    if (gate.state == DependencyGate::State::kMet) {
      gate = {DependencyGate::State::kWaiting,
              "waiting for " + Name(d) + " to " +
                  (d.type == DependencyType::kAfterOk ? "succeed" : "end") + " (" + type +
                  ", now " + *phase + ")"};
    }
  }
  return gate;
}

std::optional<std::string> MissingDependency(
    const JobSpec& spec, const std::function<bool(const JobDependency&)>& exists) {
  for (std::size_t i = 0; i < spec.dependencies.size(); ++i) {
    const auto& d = spec.dependencies[i];
    if (exists(d)) continue;
    return "spec.dependencies[" + std::to_string(i) + "].job: no job " + Name(d) +
           " (submit the jobs it depends on first)";
  }
  return std::nullopt;
}

int FreeParallelismSlots(const JobSpec& spec, const std::vector<UnitRecord>& units) {
  if (!spec.IndependentTasks() || spec.parallelism <= 0) return std::numeric_limits<int>::max();
  int busy = 0;
  for (const auto& u : units) {
    busy += u.phase == UnitPhase::kRunning || u.phase == UnitPhase::kStopping;
  }
  return std::max(0, spec.parallelism - busy);
}

std::optional<std::string> TimeLimitExceeded(int limit_seconds, Tick started_ms, Tick now) {
  if (limit_seconds <= 0 || started_ms <= 0) return std::nullopt;
  const Tick limit_ms = static_cast<Tick>(limit_seconds) * 1000;
  if (now - started_ms < limit_ms) return std::nullopt;
  return std::string(kReasonTimeLimit) + ": ran " + std::to_string((now - started_ms) / 1000) +
         " s, past spec.timeLimitSeconds (" + std::to_string(limit_seconds) +
         " s); stopped: SIGTERM, then SIGKILL after the grace period";
}

}  // namespace tessera
