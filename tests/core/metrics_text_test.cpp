// The shared Prometheus text writer: HELP and TYPE lines, escaped labels, values printed as
// the format wants them, and histograms with cumulative buckets ending in +Inf.
#include "core/metrics_text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace tessera {
namespace {

TEST(MetricsTextTest, ValuesArePrintedAsTheFormatWants) {
  EXPECT_EQ(MetricValueText(0), "0");
  EXPECT_EQ(MetricValueText(42), "42");
  EXPECT_EQ(MetricValueText(-3), "-3");
  EXPECT_EQ(MetricValueText(0.25), "0.25");
  EXPECT_EQ(MetricValueText(1e-3), "0.001");
  EXPECT_EQ(MetricValueText(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(MetricValueText(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(MetricValueText(std::nan("")), "NaN");
}

TEST(MetricsTextTest, LabelValuesEscapeBackslashQuoteAndNewline) {
  EXPECT_EQ(EscapeLabelValue("nlp/sft"), "nlp/sft");
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

TEST(MetricsTextTest, AFamilyHasHelpTypeAndItsSamples) {
  MetricsWriter w;
  w.Family("tessera_queue_pending_jobs", MetricType::kGauge, "Jobs waiting.\nTo start.");
  w.Sample({{"queue", "nlp/sft"}}, 3);
  w.Sample({{"queue", "cv"}, {"kind", "BatchJob"}}, 0.5);
  w.Single("tessera_preemption_victims_total", MetricType::kCounter, "Victims.", 7);
  EXPECT_EQ(w.text(),
            "# HELP tessera_queue_pending_jobs Jobs waiting. To start.\n"
            "# TYPE tessera_queue_pending_jobs gauge\n"
            "tessera_queue_pending_jobs{queue=\"nlp/sft\"} 3\n"
            "tessera_queue_pending_jobs{queue=\"cv\",kind=\"BatchJob\"} 0.5\n"
            "# HELP tessera_preemption_victims_total Victims.\n"
            "# TYPE tessera_preemption_victims_total counter\n"
            "tessera_preemption_victims_total 7\n");
}

// Observations 0.0625, 0.25, 0.25 and 9 against bounds 0.1, 1: bucket le=0.1 holds 1, le=1 holds
// 1 + 2 = 3 (cumulative), +Inf all 4; the sum is 9.5625.
TEST(MetricsTextTest, HistogramBucketsAreCumulativeAndEndInInf) {
  static constexpr double kBounds[] = {0.1, 1};
  Histogram h(kBounds);
  for (double v : {0.0625, 0.25, 0.25, 9.0}) h.Observe(v);
  EXPECT_EQ(h.count(), 4);
  EXPECT_EQ(h.counts()[0], 1);
  EXPECT_EQ(h.counts()[1], 2);
  MetricsWriter w;
  w.Family("tessera_x_seconds", MetricType::kHistogram, "X.");
  w.Sample({{"queue", "q"}}, h);
  EXPECT_EQ(w.text(),
            "# HELP tessera_x_seconds X.\n"
            "# TYPE tessera_x_seconds histogram\n"
            "tessera_x_seconds_bucket{queue=\"q\",le=\"0.1\"} 1\n"
            "tessera_x_seconds_bucket{queue=\"q\",le=\"1\"} 3\n"
            "tessera_x_seconds_bucket{queue=\"q\",le=\"+Inf\"} 4\n"
            "tessera_x_seconds_sum{queue=\"q\"} 9.5625\n"
            "tessera_x_seconds_count{queue=\"q\"} 4\n");
}

TEST(MetricsTextTest, AnUnlabelledHistogramHasOnlyTheLeLabel) {
  Histogram h(kLatencyBucketsSeconds);
  h.Observe(0.003);
  MetricsWriter w;
  w.Family("tessera_y_seconds", MetricType::kHistogram, "Y.");
  w.Sample({}, h);
  EXPECT_NE(w.text().find("tessera_y_seconds_bucket{le=\"0.0025\"} 0\n"), std::string::npos);
  EXPECT_NE(w.text().find("tessera_y_seconds_bucket{le=\"0.005\"} 1\n"), std::string::npos);
  EXPECT_NE(w.text().find("tessera_y_seconds_count 1\n"), std::string::npos);
}

}  // namespace
}  // namespace tessera
