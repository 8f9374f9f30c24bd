// The built-in queue orders.
//  fifo:     submit order; the head job blocks those behind it.
//  backfill: submit order with EASY backfilling (Lifka, "The ANL/IBM SP scheduling system",
//            JSSPP'95): later jobs start early only if they cannot delay the head job.
//  srtf:     shortest remaining time first, preemptive (oracle).
//  srsf:     shortest remaining service (time × GPUs) first, preemptive (oracle), as in
//            Tiresias' and Muri's comparisons.
//  las:      Tiresias' discretised two-dimensional least-attained-service (Gu et al., NSDI'19):
//            jobs sit in priority queues by attained GPU-time; lower queues first; within a
//            queue running jobs keep their GPUs ahead of waiting ones (no preemption inside a
//            queue), then FIFO; non-clairvoyant and preemptive across queues.
//  drf:      hierarchical weighted DRF over a queue tree with reclaim and checkpoint-aware
//            victims; drf-naive: the same with Kueue/Volcano-style victim order. Their cycle is
//            ScheduleFairShare (sched/quota/fair_share_cycle.h); here they only have a name and
//            the within-queue order (priority, submit time, id).
#include <algorithm>
#include <cmath>

#include "sched/queue/queue_policy.h"

namespace tessera {

namespace {

double GpusOf(const JobView& v) { return static_cast<double>(v.job->TotalGpuMilli()) / 1000.0; }

class FifoPolicy final : public QueuePolicy {
 public:
  explicit FifoPolicy(bool backfill) : backfill_(backfill) {}
  std::string_view name() const override { return backfill_ ? "backfill" : "fifo"; }
  bool preemptive() const override { return false; }
  bool oracle() const override { return backfill_; }  // reservations use run times
  bool backfill() const override { return backfill_; }
  OrderKey Key(const JobView&, Tick) const override { return {0}; }

 private:
  bool backfill_;
};

class ShortestRemainingPolicy final : public QueuePolicy {
 public:
  explicit ShortestRemainingPolicy(bool by_service) : by_service_(by_service) {}
  std::string_view name() const override { return by_service_ ? "srsf" : "srtf"; }
  bool preemptive() const override { return true; }
  bool oracle() const override { return true; }
  OrderKey Key(const JobView& v, Tick) const override {
    const double t = static_cast<double>(v.remaining);
    return {by_service_ ? t * GpusOf(v) : t};
  }

 private:
  bool by_service_;
};

class LasPolicy final : public QueuePolicy {
 public:
  explicit LasPolicy(std::vector<double> thresholds) : thresholds_(std::move(thresholds)) {
    std::sort(thresholds_.begin(), thresholds_.end());
  }
  std::string_view name() const override { return "las"; }
  bool preemptive() const override { return true; }
  OrderKey Key(const JobView& v, Tick now) const override {
    const auto queue = static_cast<double>(QueueIndex(Attained(v, now)));
    return {2 * queue + (v.phase == JobPhase::kRunning ? 0 : 1)};
  }
  Tick NextKeyChange(const JobView& v, Tick now) const override {
    if (v.phase != JobPhase::kRunning) return kNever;
    const double attained = Attained(v, now);
    const auto q = QueueIndex(attained);
    if (q >= thresholds_.size()) return kNever;
    const double gpus = GpusOf(v);
    if (gpus <= 0) return kNever;
    const double seconds = (thresholds_[q] - attained) / gpus;
    return now + std::max<Tick>(1, static_cast<Tick>(std::ceil(seconds * kSecond)));
  }

 private:
  // Attained service including the current run up to `now`.
  static double Attained(const JobView& v, Tick now) {
    double a = v.attained_gpu_seconds;
    if (v.phase == JobPhase::kRunning) a += GpusOf(v) * ToSeconds(now - v.started);
    return a;
  }
  std::size_t QueueIndex(double attained) const {
    return static_cast<std::size_t>(
        std::upper_bound(thresholds_.begin(), thresholds_.end(), attained + 1e-6) -
        thresholds_.begin());
  }
  std::vector<double> thresholds_;
};

class FairSharePolicy final : public QueuePolicy {
 public:
  explicit FairSharePolicy(bool naive) : naive_(naive) {}
  std::string_view name() const override { return naive_ ? "drf-naive" : "drf"; }
  bool preemptive() const override { return false; }
  OrderKey Key(const JobView&, Tick) const override { return {0}; }

 private:
  bool naive_;
};

}  // namespace

std::vector<std::string> QueuePolicyNames() {
  return {"fifo", "backfill", "srtf", "srsf", "las", "drf", "drf-naive"};
}

bool IsFairSharePolicy(std::string_view name) { return name == "drf" || name == "drf-naive"; }

Result<std::unique_ptr<QueuePolicy>> MakeQueuePolicy(std::string_view name,
                                                     const QueuePolicyConfig& config) {
  if (name == "fifo") return std::make_unique<FifoPolicy>(false);
  if (name == "backfill") return std::make_unique<FifoPolicy>(true);
  if (name == "srtf") return std::make_unique<ShortestRemainingPolicy>(false);
  if (name == "srsf") return std::make_unique<ShortestRemainingPolicy>(true);
  if (name == "las") {
    for (double t : config.las_thresholds_gpu_seconds) {
      if (!(t > 0)) return InvalidArgument("las.thresholds: each threshold must be > 0");
    }
    return std::make_unique<LasPolicy>(config.las_thresholds_gpu_seconds);
  }
  if (IsFairSharePolicy(name)) return std::make_unique<FairSharePolicy>(name == "drf-naive");
  return InvalidArgument("queue policy '" + std::string(name) +
                         "' is unknown (known: fifo, backfill, srtf, srsf, las, drf, drf-naive)");
}

}  // namespace tessera
