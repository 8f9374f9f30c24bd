// An InferenceService's spec.autoscaling: it parses (also as spec.replicas.autoscaling, where
// DESIGN.md places it), round-trips through the canonical form, makes the replicas independent
// units (max of them), and bad values are refused naming the field and the reason.
#include <gtest/gtest.h>

#include "spec/document.h"
#include "spec/job_spec.h"

namespace tessera {
namespace {

std::string Service(const std::string& replicas, const std::string& lines) {
  return "apiVersion: tessera/v1\nkind: InferenceService\nmetadata: {name: chat}\nspec:\n"
         "  replicas: " +
         replicas +
         "\n  gpusPerReplica: 1\n  slo: {ttftMs: 500}\n  command: [tessera-engine-sim]\n" + lines;
}

std::string ErrorOf(const std::string& text) {
  auto spec = ParseJobSpec(text);
  EXPECT_FALSE(spec) << text;
  return spec ? std::string() : spec.error().message;
}

TEST(JobSpecAutoscalingTest, ParsesWithDefaultsAndRoundTrips) {
  auto spec = ParseJobSpec(
      Service("{min: 1, max: 4}", "  autoscaling: {metric: in-flight-requests, target: 8}\n"));
  ASSERT_TRUE(spec) << spec.error().message;
  ASSERT_TRUE(spec->autoscaling.has_value());
  EXPECT_EQ(spec->autoscaling->metric, AutoscaleMetric::kInFlightRequests);
  EXPECT_DOUBLE_EQ(spec->autoscaling->target, 8);
  EXPECT_EQ(spec->autoscaling->scale_up_stabilization_seconds, 0);
  EXPECT_EQ(spec->autoscaling->scale_down_stabilization_seconds, 300);
  EXPECT_TRUE(spec->IndependentTasks());
  EXPECT_EQ(spec->TaskCount(), 4);  // one unit per replica it may have
  auto again = ParseJobSpec(DumpJson(JobSpecToJson(*spec)));
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, *spec);
}

TEST(JobSpecAutoscalingTest, EveryMetricAndTheNestedPlace) {
  for (const char* metric :
       {"in-flight-requests", "queue-length", "kv-cache-utilization", "ttft-p90"}) {
    auto spec = ParseJobSpec(Service(
        "{min: 1, max: 3}", std::string("  autoscaling: {metric: ") + metric + ", target: 0.8}\n"));
    ASSERT_TRUE(spec) << metric << ": " << spec.error().message;
    EXPECT_EQ(AutoscaleMetricName(spec->autoscaling->metric), metric);
  }
  auto nested =
      ParseJobSpec(Service("{min: 0, max: 2, autoscaling: {metric: queue-length, target: 2, "
                           "scaleUpStabilizationSeconds: 5, scaleDownStabilizationSeconds: 30}}",
                           ""));
  ASSERT_TRUE(nested) << nested.error().message;
  EXPECT_EQ(nested->replicas_min, 0);
  EXPECT_EQ(nested->autoscaling->scale_up_stabilization_seconds, 5);
  EXPECT_EQ(nested->autoscaling->scale_down_stabilization_seconds, 30);
}

TEST(JobSpecAutoscalingTest, WithoutAutoscalingTheServiceIsOneGang) {
  auto spec = ParseJobSpec(Service("{min: 2, max: 4}", ""));
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_FALSE(spec->autoscaling);
  EXPECT_FALSE(spec->IndependentTasks());
  EXPECT_EQ(spec->TaskCount(), 2);
}

TEST(JobSpecAutoscalingTest, BadValuesAreRefusedNamingTheField) {
  EXPECT_EQ(
      ErrorOf(Service("{min: 4, max: 2}", "  autoscaling: {metric: queue-length, target: 1}\n")),
      "spec.replicas.max: must be at least min (4), got 2");
  EXPECT_EQ(ErrorOf(Service("{min: 1, max: 2}", "  autoscaling: {metric: cpu, target: 1}\n")),
            "spec.autoscaling.metric: unknown metric \"cpu\" (in-flight-requests, queue-length, "
            "kv-cache-utilization or ttft-p90)");
  EXPECT_EQ(
      ErrorOf(Service("{min: 1, max: 2}", "  autoscaling: {metric: queue-length, target: 0}\n")),
      "spec.autoscaling.target: must be a number above 0, got 0");
  EXPECT_EQ(
      ErrorOf(Service("{min: 1, max: 2}", "  autoscaling: {metric: queue-length, target: -3}\n")),
      "spec.autoscaling.target: must be a number above 0, got -3");
  EXPECT_EQ(ErrorOf(Service("{min: 1, max: 2}", "  autoscaling: {metric: queue-length}\n")),
            "spec.autoscaling.target: required");
  EXPECT_EQ(
      ErrorOf(Service("{min: 1, max: 2}",
                      "  autoscaling: {metric: kv-cache-utilization, target: 80}\n")),
      "spec.autoscaling.target: is a usage ratio for kv-cache-utilization: at most 1, got 80");
  EXPECT_EQ(ErrorOf(Service("{min: 1, max: 2}",
                            "  autoscaling: {metric: queue-length, target: 1, "
                            "scaleDownStabilizationSeconds: 7200}\n")),
            "spec.autoscaling.scaleDownStabilizationSeconds: must be between 0 and 3600, got 7200");
  EXPECT_EQ(ErrorOf(Service("{min: 0, max: 2}", "")),
            "spec.replicas.min: must be at least 1 without spec.autoscaling, got 0");
  EXPECT_EQ(ErrorOf(Service("{min: 1, max: 2, autoscaling: {metric: queue-length, target: 1}}",
                            "  autoscaling: {metric: queue-length, target: 1}\n")),
            "spec.replicas.autoscaling: give spec.autoscaling or spec.replicas.autoscaling, not "
            "both");
  EXPECT_EQ(ErrorOf("apiVersion: tessera/v1\nkind: InferenceService\nmetadata: {name: chat}\n"
                    "spec:\n  replicas: {min: 1, max: 2}\n  gpusPerReplica: 1\n"
                    "  command: [x]\n  autoscaling: {metric: ttft-p90, target: 0.8}\n"),
            "spec.autoscaling.metric: ttft-p90 scales against spec.slo.ttftMs, not given");
  EXPECT_EQ(ErrorOf(Service("{min: 1, max: 2}",
                            "  autoscaling: {metric: queue-length, "
                            "target: 1, window: 3}\n")),
            "spec.autoscaling.window: unknown field");
}

TEST(JobSpecAutoscalingTest, KpaPolicyWithKnativesDefaultsAndRoundTrips) {
  auto spec = ParseJobSpec(Service(
      "{min: 1, max: 4}", "  autoscaling: {policy: kpa, metric: in-flight-requests, target: 2}\n"));
  ASSERT_TRUE(spec) << spec.error().message;
  const AutoscalingSpec& a = *spec->autoscaling;
  EXPECT_EQ(a.policy, AutoscalePolicy::kKpa);
  EXPECT_DOUBLE_EQ(a.stable_window_seconds, 60);
  EXPECT_DOUBLE_EQ(a.panic_window_percentage, 10);
  EXPECT_DOUBLE_EQ(a.panic_threshold_percentage, 200);
  EXPECT_EQ(a.scale_down_stabilization_seconds, 0);  // Knative's scale-down delay
  auto set = ParseJobSpec(Service("{min: 1, max: 4}",
                                  "  autoscaling: {policy: kpa, metric: queue-length, target: 2, "
                                  "stableWindowSeconds: 0.2, panicWindowPercentage: 25, "
                                  "panicThresholdPercentage: 150, "
                                  "scaleDownStabilizationSeconds: 30}\n"));
  ASSERT_TRUE(set) << set.error().message;
  EXPECT_DOUBLE_EQ(set->autoscaling->stable_window_seconds, 0.2);
  EXPECT_DOUBLE_EQ(set->autoscaling->panic_window_percentage, 25);
  EXPECT_DOUBLE_EQ(set->autoscaling->panic_threshold_percentage, 150);
  EXPECT_EQ(set->autoscaling->scale_down_stabilization_seconds, 30);
  auto again = ParseJobSpec(DumpJson(JobSpecToJson(*set)));
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, *set);
  auto hpa = ParseJobSpec(Service(
      "{min: 1, max: 4}", "  autoscaling: {policy: hpa, metric: queue-length, target: 2}\n"));
  ASSERT_TRUE(hpa) << hpa.error().message;
  EXPECT_EQ(hpa->autoscaling->policy, AutoscalePolicy::kHpa);
}

TEST(JobSpecAutoscalingTest, BadPolicyValuesAreRefusedNamingTheField) {
  const std::string head = "  autoscaling: {metric: queue-length, target: 1, ";
  EXPECT_EQ(ErrorOf(Service("{min: 1, max: 2}", head + "policy: vpa}\n")),
            "spec.autoscaling.policy: unknown policy \"vpa\" (hpa or kpa)");
  EXPECT_EQ(ErrorOf(Service("{min: 1, max: 2}", head + "stableWindowSeconds: 60}\n")),
            "spec.autoscaling.stableWindowSeconds: is not a field of policy hpa (give policy: "
            "kpa)");
  EXPECT_EQ(
      ErrorOf(Service("{min: 1, max: 2}", head + "policy: kpa, scaleUpStabilizationSeconds: 5}\n")),
      "spec.autoscaling.scaleUpStabilizationSeconds: is not a field of policy kpa");
  EXPECT_EQ(ErrorOf(Service("{min: 1, max: 2}", head + "policy: kpa, stableWindowSeconds: 0}\n")),
            "spec.autoscaling.stableWindowSeconds: must be a number above 0, at most 3600, got 0");
  EXPECT_EQ(
      ErrorOf(Service("{min: 1, max: 2}", head + "policy: kpa, panicThresholdPercentage: 100}\n")),
      "spec.autoscaling.panicThresholdPercentage: must be a number from 110 to 1000, got 100");
  EXPECT_EQ(
      ErrorOf(Service("{min: 1, max: 2}", head + "policy: kpa, panicWindowPercentage: \"10%\"}\n")),
      "spec.autoscaling.panicWindowPercentage: must be a number from 1 to 100, got string \"10%\"");
}

}  // namespace
}  // namespace tessera
