#include "sched/autoscale/autoscaler.h"

#include <algorithm>
#include <cmath>

namespace tessera {

namespace {

// Guards ceil() against a ratio a rounding error above a whole number (3.0000000001 → 3).
constexpr double kCeilSlack = 1e-9;

}  // namespace

int CeilReplicas(double x) {
  if (!(x > 0)) return 0;
  return static_cast<int>(std::min(std::ceil(x - kCeilSlack), 1e6));
}

int RecommendReplicas(const AutoscalerConfig& config, int current, const AutoscaleSample& sample) {
  const double target = config.spec.target;
  int desired = current;
  if (IsSummedMetric(config.spec.metric)) {
    // HPA: ceil(ready × (total ÷ ready) ÷ target), i.e. ceil(total ÷ target); with no replica
    // ready there is no ratio to hold within the tolerance.
    const double ratio = sample.replicas > 0 ? sample.value / sample.replicas / target : 0;
    if (sample.replicas == 0 || std::abs(ratio - 1) > config.tolerance)
      desired = CeilReplicas(sample.value / target);
    if (sample.replicas == 0 && sample.value <= 0) desired = current;
  } else if (sample.replicas > 0) {
    const double ratio = sample.value / target;
    if (std::abs(ratio - 1) > config.tolerance) desired = CeilReplicas(ratio * sample.replicas);
  }
  // Scale from zero: a request waiting needs a replica whatever the metric says.
  if (sample.waiting > 0) desired = std::max(desired, 1);
  return desired;
}

std::optional<double> DemandInReplicas(const AutoscalerConfig& config,
                                       const AutoscaleSample& sample) {
  const double target = config.spec.target;
  if (IsSummedMetric(config.spec.metric)) return std::max(0.0, sample.value) / target;
  if (sample.replicas == 0) return std::nullopt;
  return std::max(0.0, sample.value) / target * sample.replicas;
}

int Autoscaler::Desired(int current, const AutoscaleSample& sample) {
  const int desired = config_.spec.policy == AutoscalePolicy::kKpa ? DesiredKpa(current, sample)
                                                                   : DesiredHpa(current, sample);
  return std::clamp(desired, config_.min_replicas, config_.max_replicas);
}

int Autoscaler::HoldForWindow(Tick now, Tick window, int replicas) {
  while (!history_.empty() && history_.front().at <= now - window) history_.pop_front();
  int held = replicas;
  for (const Recommendation& r : history_) held = std::max(held, r.replicas);
  history_.push_back({now, replicas});
  return held;
}

int Autoscaler::DesiredHpa(int current, const AutoscaleSample& sample) {
  const int recommended = RecommendReplicas(config_, current, sample);
  const Tick up_window = config_.spec.scale_up_stabilization_seconds * kSecond;
  const Tick down_window = config_.spec.scale_down_stabilization_seconds * kSecond;
  // HPA keeps the recommendations newer than now − window (time.After(cutoff)).
  const Tick keep_after = sample.at - std::max(up_window, down_window);
  while (!history_.empty() && history_.front().at <= keep_after) history_.pop_front();
  int up = recommended, down = recommended;
  for (const Recommendation& r : history_) {
    if (r.at > sample.at - up_window) up = std::min(up, r.replicas);
    if (r.at > sample.at - down_window) down = std::max(down, r.replicas);
  }
  history_.push_back({sample.at, recommended});
  int desired = current;
  if (desired < up) desired = up;
  if (desired > down) desired = down;
  return desired;
}

}  // namespace tessera
