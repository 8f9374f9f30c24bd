#include "server/job_index.h"

#include "server/controller_state.h"

namespace tessera {

namespace {

void Add(std::map<int, int>& counts, int key, int sign) {
  auto [it, unused] = counts.try_emplace(key, 0);
  if ((it->second += sign) == 0) counts.erase(it);
}

}  // namespace

void JobIndex::Count(const JobState& job, const JobFiling& f, int sign) {
  const std::int64_t id = job.rec.id;
  auto& ids = ids_[static_cast<std::size_t>(f.phase)];
  if (sign > 0) {
    ids.insert(id);
  } else {
    ids.erase(id);
  }
  CountKey key{job.rec.queue, job.rec.kind, f.phase};
  auto [count, unused] = counts_.try_emplace(std::move(key), 0);
  if ((count->second += sign) == 0) counts_.erase(count);
  QueueUsage& u = usage_[job.rec.queue];
  if (f.finished) {
    u.finished_jobs += sign;
  } else if (f.phase == api::JobPhase::kPending) {
    u.pending_jobs += sign;
    u.pending_gpu_milli += sign * f.gpu_milli;
  } else {
    u.active_jobs += sign;
  }
  if (f.pending_ready) Add(pending_priorities_, f.priority, sign);
}

void JobIndex::File(JobState& job) {
  JobFiling f;
  f.phase = JobPhaseOfUnits(job.units, job.rec.cancel_requested);
  f.finished = job.rec.finished_ms != 0;
  f.pending_ready = f.phase == api::JobPhase::kPending && !f.finished && !job.rec.held;
  f.priority = job.spec.priority;
  f.gpu_milli = job.workload.TotalGpuMilli();
  if (job.filed) {
    const JobFiling& old = *job.filed;
    if (old.phase == f.phase && old.finished == f.finished &&
        old.pending_ready == f.pending_ready && old.priority == f.priority &&
        old.gpu_milli == f.gpu_milli)
      return;
    Count(job, old, -1);
  } else {
    ++jobs_per_queue_[job.rec.queue];
  }
  Count(job, f, +1);
  job.filed = f;
}

void JobIndex::Remove(const JobState& job) {
  if (!job.filed) return;
  Count(job, *job.filed, -1);
  if (auto it = jobs_per_queue_.find(job.rec.queue);
      it != jobs_per_queue_.end() && --it->second == 0) {
    jobs_per_queue_.erase(it);
    // Its last job gone, the queue holds nothing: the views show it only if it is registered.
    if (auto u = usage_.find(job.rec.queue);
        u != usage_.end() && u->second.allocated == Resources{})
      usage_.erase(u);
  }
}

void JobIndex::LiveTask(const std::string& queue, const TaskRecord& t, int sign) {
  const Resources held{t.cpu_milli, t.memory_mib, std::ssize(t.gpus) * t.gpu_milli};
  QueueUsage& u = usage_[queue];
  if (sign > 0) {
    u.allocated += held;
  } else {
    u.allocated -= held;
  }
}

std::optional<int> JobIndex::max_pending_priority() const {
  if (pending_priorities_.empty()) return std::nullopt;
  return pending_priorities_.rbegin()->first;
}

}  // namespace tessera
