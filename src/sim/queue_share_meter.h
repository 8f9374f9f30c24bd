// Per-queue fairness over a replay: how much of the cluster each queue of the tree held, over
// time and averaged over the time it had demand (pending or running jobs), against its
// entitlement. Inner queues count their subtree. DESIGN.md: "Fairness: each queue's received
// share against its entitlement over time".
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/time.h"
#include "core/workload.h"
#include "sched/quota/queue_tree.h"

namespace tessera {

struct QueueShare {
  std::string path;
  bool leaf = true;
  double entitlement = 0;     // fraction of the cluster's GPUs
  double share_mean = 0;      // fraction of the cluster's GPUs held, mean over demand time
  double demand_seconds = 0;  // time with pending or running jobs
  double gpu_seconds = 0;     // GPU-time held
  std::vector<std::pair<double, double>> share;  // (seconds since start, fraction held)
};

class QueueShareMeter {
 public:
  // Jobs whose queue is not in `tree` are not counted.
  QueueShareMeter(const QueueTree& tree, const std::vector<Workload>& jobs, Tick start);

  void Advance(Tick now);  // accounts the time since the last call at the current holdings
  void Demand(std::size_t job, int delta);  // +1 on arrival, -1 on finish
  void Hold(std::size_t job, int sign);     // +1 on start, -1 on preemption or finish
  std::vector<QueueShare> Result(std::size_t series_points) const;

 private:
  const QueueTree& tree_;
  std::vector<int> leaf_of_job_;
  std::vector<std::int64_t> gpu_milli_of_job_;
  std::vector<std::int64_t> held_;
  std::vector<int> demand_;
  std::vector<double> share_time_, demand_time_, gpu_time_;
  std::vector<std::vector<std::pair<double, double>>> series_;
  Tick start_;
  Tick last_;
  double cluster_milli_;
};

}  // namespace tessera
