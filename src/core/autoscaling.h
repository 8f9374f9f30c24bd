// An InferenceService's `spec.autoscaling` (docs/autoscaling.md): the signal its replica count
// follows and the target per replica, and the policy that turns it into a count (Kubernetes
// HPA's stabilisation windows, or Knative's KPA with its stable and panic windows). Shared by
// the spec parser, the autoscaler (sched/autoscale/) and the controller.
#pragma once

#include <optional>
#include <string_view>

namespace tessera {

enum class AutoscaleMetric {
  kInFlightRequests,    // in-flight: requests the gateway has sent a replica and not finished
  kQueueLength,         // requests waiting for admission (the engine's num_requests_waiting)
  kKvCacheUtilization,  // the replicas' mean KV-cache usage, 0..1
  kTtftP90,             // the service's TTFT p90 ÷ spec.slo.ttftMs
};

// in-flight-requests | queue-length | kv-cache-utilization | ttft-p90
std::string_view AutoscaleMetricName(AutoscaleMetric m);
std::optional<AutoscaleMetric> ParseAutoscaleMetric(std::string_view s);
inline constexpr std::string_view kAutoscaleMetricNames =
    "in-flight-requests, queue-length, kv-cache-utilization or ttft-p90";

// Whether the metric is a count over all replicas (its per-replica value is the sum divided by
// the replicas: in-flight, queue) rather than a level every replica has (KV usage, TTFT).
inline bool IsSummedMetric(AutoscaleMetric m) {
  return m == AutoscaleMetric::kInFlightRequests || m == AutoscaleMetric::kQueueLength;
}

enum class AutoscalePolicy {
  kHpa,  // Kubernetes' Horizontal Pod Autoscaler: tolerance, scale-up/down stabilisation windows
  kKpa,  // Knative's Pod Autoscaler: the stable window's mean, the panic window on sharp rises
};

// hpa | kpa
std::string_view AutoscalePolicyName(AutoscalePolicy p);
std::optional<AutoscalePolicy> ParseAutoscalePolicy(std::string_view s);
inline constexpr std::string_view kAutoscalePolicyNames = "hpa or kpa";

inline constexpr int kDefaultScaleUpStabilizationSeconds = 0;      // HPA's scaleUp default
inline constexpr int kDefaultScaleDownStabilizationSeconds = 300;  // HPA's scaleDown default
inline constexpr int kMaxStabilizationSeconds = 3600;              // HPA's bound, too
// Knative's config-autoscaler defaults (knative.dev/docs, "Configuring the autoscaler"): the
// stable window 60 s, the panic window 10% of it, panic at 200% of the ready replicas, and no
// scale-down delay (the KPA's scaleDownStabilizationSeconds default).
inline constexpr double kDefaultKpaStableWindowSeconds = 60;
inline constexpr double kDefaultKpaPanicWindowPercentage = 10;
inline constexpr double kDefaultKpaPanicThresholdPercentage = 200;
inline constexpr int kDefaultKpaScaleDownDelaySeconds = 0;

struct AutoscalingSpec {
  AutoscalePolicy policy = AutoscalePolicy::kHpa;
  AutoscaleMetric metric = AutoscaleMetric::kInFlightRequests;
  // Per replica: requests (in-flight, queue), a usage ratio in (0, 1] (KV cache), or the share
  // of the TTFT SLO the p90 may reach (ttft-p90: 0.8 scales out at 80% of slo.ttftMs).
  double target = 1;
  int scale_up_stabilization_seconds = kDefaultScaleUpStabilizationSeconds;
  // kpa: Knative's scale-down-delay (the most wanted over it is kept); default 0 there.
  int scale_down_stabilization_seconds = kDefaultScaleDownStabilizationSeconds;
  // kpa only. Seconds, fractions allowed so that time-compressed replays keep the proportions.
  double stable_window_seconds = kDefaultKpaStableWindowSeconds;
  double panic_window_percentage = kDefaultKpaPanicWindowPercentage;
  double panic_threshold_percentage = kDefaultKpaPanicThresholdPercentage;
  friend bool operator==(const AutoscalingSpec&, const AutoscalingSpec&) = default;
};

}  // namespace tessera
