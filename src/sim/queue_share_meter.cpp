#include "sim/queue_share_meter.h"

#include <algorithm>

#include "sim/stats.h"

namespace tessera {

QueueShareMeter::QueueShareMeter(const QueueTree& tree, const std::vector<Workload>& jobs,
                                 Tick start)
    : tree_(tree),
      held_(tree.nodes().size(), 0),
      demand_(tree.nodes().size(), 0),
      share_time_(tree.nodes().size(), 0),
      demand_time_(tree.nodes().size(), 0),
      gpu_time_(tree.nodes().size(), 0),
      series_(tree.nodes().size()),
      start_(start),
      last_(start),
      cluster_milli_(static_cast<double>(std::max<std::int64_t>(tree.capacity().gpu_milli, 1))) {
  leaf_of_job_.reserve(jobs.size());
  for (const auto& w : jobs) {
    leaf_of_job_.push_back(tree.Find(w.queue));
    gpu_milli_of_job_.push_back(w.TotalGpuMilli());
  }
}

void QueueShareMeter::Advance(Tick now) {
  if (now <= last_) return;
  const double dt = ToSeconds(now - last_);
  for (std::size_t q = 0; q < held_.size(); ++q) {
    const double held = static_cast<double>(held_[q]);
    gpu_time_[q] += held / kMilliPerGpu * dt;
    if (demand_[q] > 0) {
      share_time_[q] += held / cluster_milli_ * dt;
      demand_time_[q] += dt;
    }
  }
  last_ = now;
}

void QueueShareMeter::Demand(std::size_t job, int delta) {
  for (int q = leaf_of_job_[job]; q >= 0; q = tree_.node(q).parent) {
    demand_[static_cast<std::size_t>(q)] += delta;
  }
}

void QueueShareMeter::Hold(std::size_t job, int sign) {
  const double t = ToSeconds(last_ - start_);
  for (int q = leaf_of_job_[job]; q >= 0; q = tree_.node(q).parent) {
    const auto i = static_cast<std::size_t>(q);
    held_[i] += sign * gpu_milli_of_job_[job];
    auto& s = series_[i];
    const double share = static_cast<double>(held_[i]) / cluster_milli_;
    if (!s.empty() && s.back().first == t) {
      s.back().second = share;
    } else {
      s.emplace_back(t, share);
    }
  }
}

std::vector<QueueShare> QueueShareMeter::Result(std::size_t series_points) const {
  std::vector<QueueShare> out;
  for (std::size_t q = 0; q < held_.size(); ++q) {
    const QueueNode& n = tree_.node(static_cast<int>(q));
    QueueShare s;
    s.path = n.path;
    s.leaf = n.leaf();
    s.entitlement = n.entitlement;
    s.demand_seconds = demand_time_[q];
    s.share_mean = demand_time_[q] > 0 ? share_time_[q] / demand_time_[q] : 0;
    s.gpu_seconds = gpu_time_[q];
    s.share = Downsample(series_[q], series_points);
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(),
            [](const QueueShare& a, const QueueShare& b) { return a.path < b.path; });
  return out;
}

}  // namespace tessera
