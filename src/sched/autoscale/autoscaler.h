// The replica autoscaler of InferenceServices, live and in the simulator (docs/autoscaling.md).
// Kubernetes HPA's algorithm: the recommendation is
//   desired = ceil(current × observed ÷ target)
// (for counts summed over the replicas: ceil(total ÷ target)), unchanged while observed ÷
// target is within the tolerance of 1 (HPA's --horizontal-pod-autoscaler-tolerance, 0.1);
// then stabilised as HPA's behaviour does: scaling up goes only to the lowest recommendation
// of the scale-up window, scaling down only to the highest of the scale-down window; then
// bounded by min and max replicas. Pure: the caller passes each sample with its time.
#pragma once

#include <deque>

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

// The metric's recommendation before stabilisation and bounds, with `current` replicas now.
int RecommendReplicas(const AutoscalerConfig& config, int current, const AutoscaleSample& sample);

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
  AutoscalerConfig config_;
  std::deque<Recommendation> history_;  // oldest first, within the longer window
};

}  // namespace tessera
