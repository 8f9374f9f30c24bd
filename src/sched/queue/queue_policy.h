// The queue-order extension point: in which order jobs are considered, and whether running
// jobs may be preempted to follow that order. The framework (Scheduler) owns the cycle.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "sched/snapshot.h"

namespace tessera {

// Smaller keys go first; the framework breaks ties by submit time, then job id.
struct OrderKey {
  double primary = 0;
  friend auto operator<=>(const OrderKey&, const OrderKey&) = default;
};

struct QueuePolicyConfig {
  // las: attained-service thresholds in GPU-seconds between priority queues (Tiresias'
  // discretised 2D-LAS). Default: one threshold at one GPU-hour, i.e. two queues.
  std::vector<double> las_thresholds_gpu_seconds = {3600.0};
};

class QueuePolicy {
 public:
  virtual ~QueuePolicy() = default;
  virtual std::string_view name() const = 0;
  // Preemptive policies re-plan running jobs too: a running job that the order no longer
  // admits is preempted (it keeps its progress).
  virtual bool preemptive() const = 0;
  // Oracle policies read the job's run time (JobView::remaining); name them so in outputs.
  virtual bool oracle() const { return false; }
  // Later jobs may start ahead of a blocked head job (with EASY reservations for it).
  virtual bool backfill() const { return false; }
  virtual OrderKey Key(const JobView& job, Tick now) const = 0;
  // The earliest time after `now` when this running job's key changes on its own (e.g. it
  // crosses a LAS threshold), or kNever. The simulator re-plans then.
  virtual Tick NextKeyChange(const JobView&, Tick) const { return kNever; }
};

// fifo, backfill, srtf, srsf, las, drf, drf-naive.
std::vector<std::string> QueuePolicyNames();
// drf and drf-naive: scheduled by queue-tree fair share (sched/quota/fair_share_cycle.h).
bool IsFairSharePolicy(std::string_view name);
Result<std::unique_ptr<QueuePolicy>> MakeQueuePolicy(std::string_view name,
                                                     const QueuePolicyConfig& config);

}  // namespace tessera
