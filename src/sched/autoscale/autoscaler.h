// The replica autoscaler of InferenceServices, live and in the simulator (docs/autoscaling.md).
// Two policies (spec.autoscaling.policy). hpa, Kubernetes HPA's algorithm: the recommendation is
//   desired = ceil(current × observed ÷ target)
// (for counts summed over the replicas: ceil(total ÷ target)), unchanged while observed ÷
// target is within the tolerance of 1 (HPA's --horizontal-pod-autoscaler-tolerance, 0.1);
// then stabilised as HPA's behaviour does: scaling up goes only to the lowest recommendation
// of the scale-up window, scaling down only to the highest of the scale-down window; then
// bounded by min and max replicas. kpa, Knative's KPA (pkg/autoscaler/scaling/autoscaler.go):
// ceil of the demand's mean over the stable window, or, while the panic window's mean asks for
// at least the panic threshold × the ready replicas, the panic window's count and no scale-down
// until a stable window has passed without that (kpa_policy.cpp). Pure: the caller passes each
// sample with its time.
#pragma once

#include <deque>
#include <optional>

#include "core/autoscaling.h"
#include "core/time.h"

namespace tessera {

inline constexpr double kDefaultAutoscaleTolerance = 0.1;

struct AutoscalerConfig {
  AutoscalingSpec spec;
  int min_replicas = 1;
  int max_replicas = 1;
  double tolerance = kDefaultAutoscaleTolerance;
};

// One observation of the service's metric.
struct AutoscaleSample {
  Tick at = 0;
  // Replicas the value was measured over (serving ones; starting and draining ones excluded).
  int replicas = 0;
  // Summed metrics (IsSummedMetric): the total over the service, requests the gateway holds
  // for want of a replica included; the others: the level every replica has (the mean KV
  // usage, 0..1; for ttft-p90 the service's TTFT p90 ÷ spec.slo.ttftMs).
  double value = 0;
  int waiting = 0;  // requests waiting with no replica to take them (scale from zero)
};

// Whole replicas for a demand in replicas: ceil, but a rounding error above a whole number is
// not rounded up past it; 0 for nothing or less.
int CeilReplicas(double replicas);

// The metric's recommendation before stabilisation and bounds, with `current` replicas now.
int RecommendReplicas(const AutoscalerConfig& config, int current, const AutoscaleSample& sample);

// The replicas the sample asks for at the target, unrounded (total ÷ target for the summed
// metrics, ratio × measured replicas for the levels); nullopt when it measured nothing.
std::optional<double> DemandInReplicas(const AutoscalerConfig& config,
                                       const AutoscaleSample& sample);

class Autoscaler {
 public:
  explicit Autoscaler(AutoscalerConfig config) : config_(config) {}

  // The replicas the service should have after `sample`, with `current` now (serving,
  // starting and pending ones). Samples come in time order.
  int Desired(int current, const AutoscaleSample& sample);

  const AutoscalerConfig& config() const { return config_; }

 private:
  struct Recommendation {
    Tick at = 0;
    int replicas = 0;
  };
  struct Demand {
    Tick at = 0;
    double replicas = 0;
  };
  int DesiredHpa(int current, const AutoscaleSample& sample);
  int DesiredKpa(int current, const AutoscaleSample& sample);
  // The most of `history_` newer than `window` before `now` and `replicas`, then `replicas`
  // recorded: a scale-down window (HPA's) or delay (Knative's).
  int HoldForWindow(Tick now, Tick window, int replicas);

  AutoscalerConfig config_;
  std::deque<Recommendation> history_;  // oldest first, within the longer window
  // kpa: the demand samples of the stable window, and the panic state (Knative's panicTime and
  // maxPanicPods: panicking while the last sample over the threshold is set).
  std::deque<Demand> demand_;
  std::optional<Tick> last_over_panic_threshold_;
  int max_panic_replicas_ = 0;
  bool started_ = false;
};

}  // namespace tessera
