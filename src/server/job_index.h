// What the views count and list without a pass over every job: the ids of the jobs in each
// phase, jobs by (queue, kind, phase), what each queue holds (its pending, active and finished
// jobs, the GPUs its pending jobs ask for, the resources its live tasks hold) and the priorities
// of the pending jobs not held. ControllerState keeps it as it adds, changes and deletes jobs
// and tasks, so that a paged phase listing touches only the jobs it returns, and /v1/status,
// /v1/queues and /metrics count in time independent of the number of jobs.
//
// Thread-safety: none; ControllerState's (under ControllerCore's mutex).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include "server/job_phase.h"
#include "server/queue_view.h"
#include "store/records.h"

namespace tessera {

struct JobState;

// How the index filed a job; kept in its JobState, so that refiling finds the old entries.
struct JobFiling {
  api::JobPhase phase = api::JobPhase::kPending;
  bool finished = false;       // finished_ms != 0
  bool pending_ready = false;  // pending, not held, not finished: what a new job competes with
  int priority = 0;
  std::int64_t gpu_milli = 0;  // the GPUs it asks for in all
};

class JobIndex {
 public:
  // (queue, kind, phase): the key of a job count.
  using CountKey = std::tuple<std::string, std::string, api::JobPhase>;

  // Files `job` as it stands now, moving it from where it was filed before (if it was).
  void File(JobState& job);
  // Forgets `job` (about to be deleted).
  void Remove(const JobState& job);
  // A task of a job of `queue` became live (sign +1) or stopped being live (-1).
  void LiveTask(const std::string& queue, const TaskRecord& task, int sign);

  const std::set<std::int64_t>& ids(api::JobPhase phase) const {
    return ids_[static_cast<std::size_t>(phase)];
  }
  // Jobs filed by (queue, kind, phase), only counts above zero.
  const std::map<CountKey, int>& counts() const { return counts_; }
  // By queue: every queue that holds a job (or held one that has not been deleted).
  const std::map<std::string, QueueUsage>& usage() const { return usage_; }
  // The highest priority of a pending job that is not held; nullopt when there is none.
  std::optional<int> max_pending_priority() const;

 private:
  void Count(const JobState& job, const JobFiling& filing, int sign);

  std::array<std::set<std::int64_t>, api::kJobPhaseCount> ids_;
  std::map<CountKey, int> counts_;
  std::map<std::string, QueueUsage> usage_;
  std::map<std::string, int> jobs_per_queue_;  // filed jobs, so that a queue's row ends with them
  std::map<int, int> pending_priorities_;      // priority -> pending jobs not held
};

}  // namespace tessera
