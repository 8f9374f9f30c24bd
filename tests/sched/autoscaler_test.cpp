// The InferenceService autoscaler (sched/autoscale/): Kubernetes HPA's formula, tolerance and
// stabilisation windows, and Knative's KPA (stable and panic windows, scale rates), worked by
// hand.
#include "sched/autoscale/autoscaler.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

AutoscalerConfig Config(AutoscaleMetric metric, double target, int min, int max) {
  AutoscalerConfig c;
  c.spec.metric = metric;
  c.spec.target = target;
  c.min_replicas = min;
  c.max_replicas = max;
  return c;
}

AutoscaleSample At(double seconds, int replicas, double value, int waiting = 0) {
  return AutoscaleSample{FromSeconds(seconds), replicas, value, waiting};
}

TEST(RecommendReplicasTest, SummedMetricIsCeilOfTotalOverTarget) {
  const auto c = Config(AutoscaleMetric::kInFlightRequests, 4, 1, 10);
  // 2 replicas with 18 in flight: 9 each, 2.25× the target → ceil(2 × 2.25) = 5.
  EXPECT_EQ(RecommendReplicas(c, 2, At(0, 2, 18)), 5);
  // 2 replicas with 2 in flight: a quarter of the target → 1.
  EXPECT_EQ(RecommendReplicas(c, 2, At(0, 2, 2)), 1);
  // Exactly a whole number of replicas is not rounded up past it.
  EXPECT_EQ(RecommendReplicas(c, 2, At(0, 2, 12)), 3);
}

TEST(RecommendReplicasTest, WithinTheToleranceNothingChanges) {
  const auto c = Config(AutoscaleMetric::kQueueLength, 10, 1, 10);
  // 4 replicas at 10.9 each: 9% over the target, within HPA's 10% → stay at 4 (ceil would be 5).
  EXPECT_EQ(RecommendReplicas(c, 4, At(0, 4, 43.6)), 4);
  // 4 replicas at 9.1 each: 9% under → stay at 4.
  EXPECT_EQ(RecommendReplicas(c, 4, At(0, 4, 36.4)), 4);
  // 12% over: out of the tolerance → ceil(44.8 / 10) = 5.
  EXPECT_EQ(RecommendReplicas(c, 4, At(0, 4, 44.8)), 5);
  AutoscalerConfig exact = c;
  exact.tolerance = 0;
  EXPECT_EQ(RecommendReplicas(exact, 4, At(0, 4, 43.6)), 5);
}

TEST(RecommendReplicasTest, LevelMetricScalesTheMeasuredReplicas) {
  const auto kv = Config(AutoscaleMetric::kKvCacheUtilization, 0.5, 1, 10);
  // 3 replicas at 90% KV usage against a target of 50%: ceil(3 × 1.8) = 6.
  EXPECT_EQ(RecommendReplicas(kv, 3, At(0, 3, 0.9)), 6);
  // Nothing measured (no replica serving yet): no change.
  EXPECT_EQ(RecommendReplicas(kv, 3, At(0, 0, 0)), 3);
  const auto ttft = Config(AutoscaleMetric::kTtftP90, 0.8, 1, 10);
  // TTFT p90 at 1.2 × the SLO against 0.8: ratio 1.5 over 2 serving replicas → 3.
  EXPECT_EQ(RecommendReplicas(ttft, 2, At(0, 2, 1.2)), 3);
}

TEST(RecommendReplicasTest, ScalesFromZeroOnAWaitingRequest) {
  const auto kv = Config(AutoscaleMetric::kKvCacheUtilization, 0.5, 0, 4);
  EXPECT_EQ(RecommendReplicas(kv, 0, At(0, 0, 0)), 0);
  EXPECT_EQ(RecommendReplicas(kv, 0, At(0, 0, 0, 1)), 1);
  const auto inflight = Config(AutoscaleMetric::kInFlightRequests, 2, 0, 4);
  // 5 requests held at the gateway for a service with no replica: ceil(5 / 2) = 3.
  EXPECT_EQ(RecommendReplicas(inflight, 0, At(0, 0, 5, 5)), 3);
}

TEST(AutoscalerTest, ScalesUpAtOnceAndDownOnlyAfterTheWindow) {
  Autoscaler a(Config(AutoscaleMetric::kInFlightRequests, 1, 1, 8));  // down window 300 s
  EXPECT_EQ(a.config().spec.scale_down_stabilization_seconds, 300);
  EXPECT_EQ(a.Desired(1, At(0, 1, 6)), 6);   // up at once (scale-up window 0)
  EXPECT_EQ(a.Desired(6, At(60, 6, 2)), 6);  // down held: 6 was wanted 60 s ago
  EXPECT_EQ(a.Desired(6, At(120, 6, 3)), 6);
  EXPECT_EQ(a.Desired(6, At(299, 6, 2)), 6);  // the 6 of t=0 is 299 s old: still in the window
  EXPECT_EQ(a.Desired(6, At(300, 6, 2)), 3);  // gone: the highest since is the 3 of t=120
  EXPECT_EQ(a.Desired(3, At(420, 3, 2)), 2);  // the 3 of t=120 is 300 s old: gone
}

TEST(AutoscalerTest, ScaleUpWindowTakesTheLowestRecentRecommendation) {
  AutoscalerConfig c = Config(AutoscaleMetric::kInFlightRequests, 1, 1, 8);
  c.spec.scale_up_stabilization_seconds = 30;
  c.spec.scale_down_stabilization_seconds = 0;
  Autoscaler a(c);
  EXPECT_EQ(a.Desired(2, At(0, 2, 2)), 2);
  EXPECT_EQ(a.Desired(2, At(10, 2, 5)), 2);  // 2 was recommended 10 s ago: hold
  EXPECT_EQ(a.Desired(2, At(20, 2, 6)), 2);
  EXPECT_EQ(a.Desired(2, At(30, 2, 6)), 5);  // the 2 of t=0 left the window; lowest since: 5
  EXPECT_EQ(a.Desired(5, At(31, 5, 1)), 1);  // down at once (window 0)
}

TEST(AutoscalerTest, BoundedByMinAndMax) {
  Autoscaler a(Config(AutoscaleMetric::kInFlightRequests, 1, 2, 4));
  EXPECT_EQ(a.Desired(2, At(0, 2, 100)), 4);
  AutoscalerConfig c = Config(AutoscaleMetric::kInFlightRequests, 1, 2, 4);
  c.spec.scale_down_stabilization_seconds = 0;
  Autoscaler b(c);
  EXPECT_EQ(b.Desired(4, At(0, 4, 0)), 2);
}

TEST(AutoscalerTest, SameSamplesSameDecisions) {
  auto run = [] {
    Autoscaler a(Config(AutoscaleMetric::kQueueLength, 3, 1, 16));
    std::vector<int> out;
    int current = 1;
    for (int i = 0; i < 200; ++i) {
      const double load = (i * 37 % 101) / 2.0;
      current = a.Desired(current, At(i * 15.0, current, load));
      out.push_back(current);
    }
    return out;
  };
  EXPECT_EQ(run(), run());
}

AutoscalerConfig Kpa(int min, int max) {
  AutoscalerConfig c = Config(AutoscaleMetric::kInFlightRequests, 1, min, max);
  c.spec.policy = AutoscalePolicy::kKpa;
  c.spec.scale_down_stabilization_seconds = 0;  // Knative's scale-down delay default
  return c;
}

TEST(KpaTest, StableModeTakesTheStableWindowsMean) {
  Autoscaler a(Kpa(1, 16));                  // stable 60 s, panic 6 s, threshold 200%
  EXPECT_EQ(a.Desired(4, At(0, 4, 4)), 4);   // a new autoscaler with 4 running starts panicking
  EXPECT_EQ(a.Desired(4, At(61, 4, 4)), 4);  // that panic is over a stable window later
  EXPECT_EQ(a.Desired(4, At(70, 4, 4)), 4);
  // 7 wanted now: the stable mean over (20, 80] is (4 + 4 + 7) / 3 = 5; the panic window's 7
  // (its one sample) is under 200% of the 4 ready.
  EXPECT_EQ(a.Desired(4, At(80, 4, 7)), 5);
  // Falling to 1: the mean over (30, 90], (4 + 4 + 7 + 1) / 4 = 4, not the last sample.
  EXPECT_EQ(a.Desired(5, At(90, 5, 1)), 4);
}

TEST(KpaTest, PanicsOnASharpRiseAndDoesNotScaleDownUntilAStableWindowPassed) {
  Autoscaler a(Kpa(1, 16));
  for (int t = 0; t <= 50; t += 10) EXPECT_EQ(a.Desired(2, At(t, 2, 2)), 2);  // 2 ready, 2 wanted
  // 8 wanted: the panic window (the last sample) asks for 4× the 2 ready → panic; the stable
  // mean over (0, 60] is (5 × 2 + 8) / 6 = 3, the panic count 8 is taken.
  EXPECT_EQ(a.Desired(2, At(60, 2, 8)), 8);
  // The load is gone, but no scale-down while panicking (60 s after the last sample over).
  EXPECT_EQ(a.Desired(8, At(70, 8, 2)), 8);
  EXPECT_EQ(a.Desired(8, At(120, 8, 2)), 8);
  // Out of panic: the stable mean over (70, 130] is 2, but at most halving per decision
  // (Knative's max scale-down rate 2): 4, then 2.
  EXPECT_EQ(a.Desired(8, At(130, 8, 2)), 4);
  EXPECT_EQ(a.Desired(4, At(140, 4, 2)), 2);
}

TEST(KpaTest, ScaleDownDelayKeepsTheMostWanted) {
  AutoscalerConfig c = Kpa(1, 16);
  c.spec.stable_window_seconds = 10;  // one sample per window: the mean is the sample
  c.spec.scale_down_stabilization_seconds = 30;
  Autoscaler a(c);
  EXPECT_EQ(a.Desired(1, At(0, 1, 1)), 1);
  EXPECT_EQ(a.Desired(1, At(10, 1, 1.5)), 2);  // 2 is 200% of the 1 ready: panic, 2
  // The panic ended (10 s without a sample over), but the delay keeps the 2 of t=10.
  EXPECT_EQ(a.Desired(2, At(30, 2, 1)), 2);
  EXPECT_EQ(a.Desired(2, At(40, 2, 1)), 1);  // the 2 of t=10 is 30 s old: gone
}

TEST(KpaTest, ScalesFromZeroAndKeepsTheScaleWithoutData) {
  AutoscalerConfig c = Kpa(0, 4);
  c.spec.metric = AutoscaleMetric::kKvCacheUtilization;
  c.spec.target = 0.5;
  Autoscaler a(c);
  EXPECT_EQ(a.Desired(0, At(0, 0, 0)), 0);     // nothing measured, nothing waiting
  EXPECT_EQ(a.Desired(0, At(1, 0, 0, 1)), 1);  // a request waits: one replica
  EXPECT_EQ(a.Desired(3, At(2, 0, 0)), 3);     // no replica answered: the scale stays
}

}  // namespace
}  // namespace tessera
