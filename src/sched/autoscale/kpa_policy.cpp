// Knative's Pod Autoscaler (KPA) as the `kpa` policy of the autoscaler (docs/autoscaling.md),
// after knative/serving pkg/autoscaler/scaling/autoscaler.go, which AIBrix's KPA follows: the
// stable count is ceil of the demand's mean over the stable window, the panic count ceil of its
// mean over the panic window (a share of the stable one); both stay within Knative's scale
// rates of the ready replicas. Once the panic count reaches the panic threshold × the ready
// replicas the autoscaler panics: it takes the larger count and never goes below the most it
// asked for while panicking, until a stable window has passed below the threshold. Then
// Knative's scale-down delay keeps the most wanted over scaleDownStabilizationSeconds.
#include <algorithm>
#include <cmath>

#include "sched/autoscale/autoscaler.h"

namespace tessera {

namespace {

// Knative's max-scale-up-rate and max-scale-down-rate defaults: per decision at most 1000× the
// ready replicas up, and at most halving them down.
constexpr double kMaxScaleUpRate = 1000;
constexpr double kMaxScaleDownRate = 2;

}  // namespace

int Autoscaler::DesiredKpa(int current, const AutoscaleSample& sample) {
  const AutoscalingSpec& spec = config_.spec;
  const Tick now = sample.at;
  if (!started_) {
    // Knative starts a new autoscaler panicking when more than one replica runs, so that one
    // restarted without history does not scale down before it has a window of it.
    started_ = true;
    if (current > 1) {
      last_over_panic_threshold_ = now;
      max_panic_replicas_ = current;
    }
  }
  const std::optional<double> demand = DemandInReplicas(config_, sample);
  // Nothing measured: Knative keeps the scale without data; a waiting request still needs one.
  if (!demand) return sample.waiting > 0 ? std::max(current, 1) : current;
  const Tick stable_window = FromSeconds(spec.stable_window_seconds);
  const Tick panic_window =
      FromSeconds(spec.stable_window_seconds * spec.panic_window_percentage / 100);
  demand_.push_back({now, *demand});
  while (demand_.front().at <= now - stable_window) demand_.pop_front();
  double stable_sum = 0, panic_sum = 0;
  int panic_samples = 0;
  for (const Demand& d : demand_) {
    stable_sum += d.replicas;
    // The newest sample always counts: a panic window shorter than the sampling interval is
    // the last sample.
    if (d.at > now - panic_window || &d == &demand_.back()) {
      panic_sum += d.replicas;
      ++panic_samples;
    }
  }
  const double ready = std::max(1, sample.replicas);
  const int max_up = static_cast<int>(std::ceil(kMaxScaleUpRate * ready));
  const int max_down = static_cast<int>(std::floor(ready / kMaxScaleDownRate));
  const int stable_count = CeilReplicas(stable_sum / static_cast<double>(demand_.size()));
  const int panic_count = CeilReplicas(panic_sum / panic_samples);
  const bool over_threshold = panic_count / ready >= spec.panic_threshold_percentage / 100;
  if (over_threshold) {
    last_over_panic_threshold_ = now;
  } else if (last_over_panic_threshold_ && *last_over_panic_threshold_ + stable_window < now) {
    last_over_panic_threshold_.reset();
    max_panic_replicas_ = 0;
  }
  int desired = std::clamp(stable_count, max_down, max_up);
  if (last_over_panic_threshold_) {
    desired = std::max(desired, std::clamp(panic_count, max_down, max_up));
    max_panic_replicas_ = std::max(max_panic_replicas_, desired);
    desired = max_panic_replicas_;  // no scale-down while panicking
  }
  desired = HoldForWindow(now, spec.scale_down_stabilization_seconds * kSecond, desired);
  // Scale from zero: a request waiting needs a replica whatever the windows say.
  if (sample.waiting > 0) desired = std::max(desired, 1);
  return desired;
}

}  // namespace tessera
