#include "core/autoscaling.h"

namespace tessera {

std::string_view AutoscaleMetricName(AutoscaleMetric m) {
  switch (m) {
    case AutoscaleMetric::kInFlightRequests:
      return "in-flight-requests";
    case AutoscaleMetric::kQueueLength:
      return "queue-length";
    case AutoscaleMetric::kKvCacheUtilization:
      return "kv-cache-utilization";
    case AutoscaleMetric::kTtftP90:
      return "ttft-p90";
  }
  return "in-flight-requests";
}

std::string_view AutoscalePolicyName(AutoscalePolicy p) {
  return p == AutoscalePolicy::kKpa ? "kpa" : "hpa";
}

std::optional<AutoscalePolicy> ParseAutoscalePolicy(std::string_view s) {
  if (s == "hpa") return AutoscalePolicy::kHpa;
  if (s == "kpa") return AutoscalePolicy::kKpa;
  return std::nullopt;
}

std::optional<AutoscaleMetric> ParseAutoscaleMetric(std::string_view s) {
  for (AutoscaleMetric m : {AutoscaleMetric::kInFlightRequests, AutoscaleMetric::kQueueLength,
                            AutoscaleMetric::kKvCacheUtilization, AutoscaleMetric::kTtftP90}) {
    if (AutoscaleMetricName(m) == s) return m;
  }
  return std::nullopt;
}

}  // namespace tessera
