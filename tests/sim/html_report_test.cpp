// Tests of the simulator's HTML report writer: one self-contained page with Chart.js inlined,
// one canvas per chart the data supports, strings from the summary escaped, inline JSON that
// parses back, and no crash on partial or malformed summaries.
#include "sim/report/html_report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "sim/report/html_util.h"

namespace tessera {
namespace {

using nlohmann::json;

std::size_t Count(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + needle.size())) {
    ++n;
  }
  return n;
}

json Demand(double scale, std::size_t n = 131) {
  json a = json::array();
  for (std::size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(i) / 100.0;
    a.push_back(i % 17 == 5 ? json() : json(std::min(d, 1.0) * scale));  // a few gaps
  }
  return a;
}

json AllocationSummary() {
  return {
      {"experiment", "allocation"},
      {"trace", {{"path", "../shared/traces/openb/openb_pod_list_default.csv"}, {"jobs", 8152}}},
      {"cluster", {{"nodes", 1213}, {"gpus", 6212}}},
      {"generated_by", "tessera 0.1.0"},
      {"simulated_gpus", true},
      {"results",
       {{{"policy", "fgd"},
         {"seeds", 10},
         {"oracle", false},
         {"allocation_at_demand", Demand(0.95)},
         {"allocation_at_demand_min", Demand(0.93)},
         {"allocation_at_demand_max", Demand(0.97)},
         {"fragmentation_at_demand", Demand(0.05)},
         {"gpu_allocation_ratio", 0.91},
         {"jobs", {{"submitted", 8152}, {"finished", 0}, {"unschedulable", 312}}},
         {"sim_wall_seconds", 3.25}},
        {{"policy", "best-fit"},
         {"seeds", 10},
         {"oracle", true},
         {"allocation_at_demand", Demand(0.88)},
         {"fragmentation_at_demand", Demand(0.12)},
         {"gpu_allocation_ratio", 0.85}}}}};
}

json Pairs(std::size_t n, double (*f)(double)) {
  json a = json::array();
  for (std::size_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i) * 60.0;
    a.push_back({t, f(t)});
  }
  return a;
}

json ReplaySummary(std::size_t series_length = 500) {
  json cdf = json::array();
  for (int i = 1; i <= 100; ++i) cdf.push_back({std::pow(10.0, i / 20.0), i / 100.0});
  const auto gpus = [](double t) { return std::floor(3000 + 2000 * std::sin(t / 5000)); };
  const auto queue = [](double t) { return std::floor(50 + 40 * std::cos(t / 7000)); };
  json jct = {{"mean", 5400.0}, {"p50", 1800.0}, {"p95", 36000.0}, {"p99", 90000.0}};
  json wait = {{"mean", 600.0}, {"p50", 30.0}, {"p95", 4000.0}, {"p99", 9000.0}};
  json result = {{"policy", "tiresias"},
                 {"seeds", 1},
                 {"jct_seconds", jct},
                 {"queue_seconds", wait},
                 {"makespan_seconds", 2.5e6},
                 {"gpu_allocation_ratio", 0.73},
                 {"jobs", {{"submitted", 1000}, {"finished", 990}, {"unschedulable", 10}}},
                 {"preemptions", 42},
                 {"series",
                  {{"jct_cdf", cdf},
                   {"gpus_allocated", Pairs(series_length, +gpus)},
                   {"queue_length", Pairs(series_length, +queue)}}}};
  json other = result;
  other["policy"] = "fifo";
  other["jct_seconds"]["mean"] = 7200.0;
  return {{"experiment", "replay"},
          {"trace", {{"path", "philly.csv"}, {"jobs", 1000}}},
          {"cluster", {{"nodes", 100}, {"gpus", 800}}},
          {"results", {result, other}}};
}

// The inline JSON document of the page, parsed.
json InlineData(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"tessera-data\">";
  const std::size_t begin = html.find(open);
  EXPECT_NE(begin, std::string::npos);
  if (begin == std::string::npos) return nullptr;
  const std::size_t start = begin + open.size();
  const std::size_t end = html.find("</script>", start);
  EXPECT_NE(end, std::string::npos);
  return json::parse(html.substr(start, end - start));
}

const json* ChartById(const json& data, const std::string& id) {
  for (const json& c : data["charts"]) {
    if (c["id"] == id) return &c;
  }
  return nullptr;
}

TEST(HtmlReportTest, InlinesChartJsAndIsSelfContained) {
  const std::string html = RenderHtmlReport(AllocationSummary());
  EXPECT_TRUE(html.starts_with("<!DOCTYPE html>"));
  EXPECT_NE(html.find("Chart.js v4"), std::string::npos);
  EXPECT_NE(html.find("LogarithmicScale"), std::string::npos);
  EXPECT_NE(html.find("DatasetController"), std::string::npos);
  const std::regex remote(
      R"re(<(script|link|img|iframe)[^>]*\s(src|href)\s*=\s*["']?(https?:)?//)re",
      std::regex::icase);
  EXPECT_FALSE(std::regex_search(html, remote));
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
}

TEST(HtmlReportTest, HeaderNamesExperimentTraceAndCluster) {
  const std::string html = RenderHtmlReport(AllocationSummary());
  EXPECT_NE(html.find("allocation"), std::string::npos);
  EXPECT_NE(html.find("openb_pod_list_default.csv"), std::string::npos);
  EXPECT_NE(html.find("8,152 jobs"), std::string::npos);
  EXPECT_NE(html.find("1,213 nodes"), std::string::npos);
  EXPECT_NE(html.find("6,212 GPUs"), std::string::npos);
  EXPECT_NE(html.find("simulated cluster"), std::string::npos);
  EXPECT_NE(html.find("tessera 0.1.0"), std::string::npos);
}

TEST(HtmlReportTest, AllocationHasAllocationAndFragmentationCharts) {
  const std::string html = RenderHtmlReport(AllocationSummary());
  EXPECT_EQ(Count(html, "<canvas "), 2u);
  EXPECT_NE(html.find("id=\"chart-allocation\""), std::string::npos);
  EXPECT_NE(html.find("id=\"chart-fragmentation\""), std::string::npos);
  EXPECT_NE(html.find("(oracle)"), std::string::npos);
  EXPECT_NE(html.find("91.0"), std::string::npos);  // gpu_allocation_ratio as a percentage
  // Allocation and fragmentation picked out of the arrays at 80, 100 and 130 % demand.
  EXPECT_NE(html.find("Allocation (%) at demand"), std::string::npos);
  EXPECT_NE(html.find(">130 %</th>"), std::string::npos);
  EXPECT_NE(html.find(">76.0<"), std::string::npos);  // fgd at 80 %: 0.8 * 0.95
  EXPECT_NE(html.find("Fragmentation (%) at demand"), std::string::npos);

  const json data = InlineData(html);
  ASSERT_TRUE(data["charts"].is_array());
  ASSERT_EQ(data["charts"].size(), 2u);
  const json* alloc = ChartById(data, "chart-allocation");
  ASSERT_NE(alloc, nullptr);
  // ideal line, fgd band (low, high) and line, best-fit line (no band: no min/max given)
  ASSERT_EQ((*alloc)["datasets"].size(), 5u);
  EXPECT_EQ((*alloc)["datasets"][0]["role"], "ref");
  EXPECT_EQ((*alloc)["datasets"][1]["role"], "band-low");
  EXPECT_EQ((*alloc)["datasets"][2]["role"], "band-high");
  EXPECT_EQ((*alloc)["datasets"][3]["label"], "fgd");
  EXPECT_EQ((*alloc)["datasets"][4]["label"], "best-fit (oracle)");
  const json& points = (*alloc)["datasets"][3]["points"];
  ASSERT_EQ(points.size(), 131u);
  EXPECT_EQ(points[50][0], 50);
  EXPECT_NEAR(points[50][1].get<double>(), 47.5, 1e-9);  // 0.5 * 0.95, in percent
  EXPECT_TRUE(points[5][1].is_null());                   // no sample at 5 %
  EXPECT_EQ((*alloc)["x"]["max"], 130);
}

// Two policies that allocate all arrived demand up to 85 % and then part (a: 100 % at 130 %
// demand; b: flat from 85 %, 85 % at the end): the page opens with the verdict (a, 15 points
// more at 100 % demand: 1.0 vs 0.85) and the charts start at 70 % demand (a step of 10 before
// 85, floored to tens), the allocation axis at 60 % (b's 0.70 at 70 % is the lowest value from
// there: 70, less 10).
TEST(HtmlReportTest, OpensWithTheVerdictAndZoomsToWherePoliciesDiffer) {
  json a = json::array(), b = json::array();
  for (int i = 0; i <= 130; ++i) {
    a.push_back(std::min(i, 100) / 100.0);
    b.push_back(std::min(i, 85) / 100.0);
  }
  const json summary = {{"experiment", "allocation"},
                        {"results",
                         {{{"policy", "a"}, {"allocation_at_demand", a}},
                          {{"policy", "b"}, {"allocation_at_demand", b}}}}};
  const std::string html = RenderHtmlReport(summary);
  const auto verdict = html.find("<p class=\"verdict\" id=\"verdict\">a allocates the most GPUs");
  ASSERT_NE(verdict, std::string::npos);
  EXPECT_LT(verdict, html.find("<dl class=\"meta\">"));  // first thing under the title
  EXPECT_NE(html.find("15.0 points more than the runner-up (b, 85.0 %)"), std::string::npos);
  const json data = InlineData(html);
  const json* alloc = ChartById(data, "chart-allocation");
  ASSERT_NE(alloc, nullptr);
  EXPECT_EQ((*alloc)["x"]["min"], 70);
  EXPECT_EQ((*alloc)["x"]["max"], 130);
  EXPECT_EQ((*alloc)["y"]["min"], 60);
  EXPECT_NE(html.find("Zoomed to 70&nbsp;% demand and up"), std::string::npos);

  // Policies that part at once: no zoom.
  json c = json::array();
  for (int i = 0; i <= 130; ++i) c.push_back(std::min(i, 100) / 200.0);
  const json early = {{"experiment", "allocation"},
                      {"results",
                       {{{"policy", "a"}, {"allocation_at_demand", a}},
                        {{"policy", "c"}, {"allocation_at_demand", c}}}}};
  const json early_data = InlineData(RenderHtmlReport(early));
  EXPECT_EQ((*ChartById(early_data, "chart-allocation"))["x"]["min"], 0);
  // One policy has nothing to differ from: the whole range.
  const json alone = {{"experiment", "allocation"},
                      {"results", {{{"policy", "b"}, {"allocation_at_demand", b}}}}};
  EXPECT_EQ((*ChartById(InlineData(RenderHtmlReport(alone)), "chart-allocation"))["x"]["min"], 0);
}

// Percent charts whose lines all lie high (co-location, serving) start their y axis below the
// lowest line, and say so; one with a line near 0 keeps its axis at 0.
TEST(HtmlReportTest, PercentChartsZoomToWhereTheLinesLie) {
  const auto setup = [](const char* name, double low_alloc, double low_slo) {
    return json{
        {"policy", name},
        {"series",
         {{"gpu_allocation_ratio",
           json::array({json::array({0, low_alloc}), json::array({3600, 0.99})})},
          {"slo_attainment", json::array({json::array({0, low_slo}), json::array({3600, 1.0})})}}}};
  };
  const json summary = {
      {"experiment", "colocation"},
      {"results", json::array({setup("dedicated", 0.5725, 0.8575), setup("shared", 0.684, 0.55)})}};
  const std::string html = RenderHtmlReport(summary);
  const json data = InlineData(html);
  const json* alloc = ChartById(data, "chart-colocation-allocation");
  const json* slo = ChartById(data, "chart-colocation-slo");
  ASSERT_NE(alloc, nullptr);
  ASSERT_NE(slo, nullptr);
  EXPECT_EQ((*alloc)["y"]["min"], 50);  // lowest 57.25 %
  EXPECT_EQ((*slo)["y"]["min"], 50);    // lowest 55 %
  EXPECT_NE(html.find("The y axis starts at 50&nbsp;%"), std::string::npos);
  const json collapsed = {
      {"experiment", "colocation"},
      {"results", json::array({setup("dedicated", 0.5725, 0.1), setup("shared", 0.684, 0.9)})}};
  EXPECT_EQ(
      (*ChartById(InlineData(RenderHtmlReport(collapsed)), "chart-colocation-slo"))["y"]["min"], 0);
}

TEST(HtmlReportTest, ReplayHasCdfGpusAndQueueCharts) {
  const std::string html = RenderHtmlReport(ReplaySummary());
  EXPECT_EQ(Count(html, "<canvas "), 3u);
  for (const char* id : {"chart-jct-cdf", "chart-gpus-allocated", "chart-queue-length"}) {
    EXPECT_NE(html.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
  }
  const json data = InlineData(html);
  const json* cdf = ChartById(data, "chart-jct-cdf");
  ASSERT_NE(cdf, nullptr);
  EXPECT_EQ((*cdf)["x"]["type"], "logarithmic");
  EXPECT_EQ((*cdf)["datasets"].size(), 2u);
  const json* gpus = ChartById(data, "chart-gpus-allocated");
  ASSERT_NE(gpus, nullptr);
  EXPECT_EQ((*gpus)["datasets"].size(), 3u);  // capacity line + two policies
  EXPECT_EQ((*gpus)["datasets"][0]["role"], "ref");
  // Table: each duration column in the unit its values suit, counts with separators.
  EXPECT_NE(html.find("Job completion time</th>"), std::string::npos);
  EXPECT_NE(html.find(">mean (h)</th>"), std::string::npos);   // up to 7,200 s
  EXPECT_NE(html.find(">p50 (min)</th>"), std::string::npos);  // 1,800 s
  EXPECT_NE(html.find(">p99 (h)</th>"), std::string::npos);    // 90,000 s
  EXPECT_NE(html.find("Makespan (d)"), std::string::npos);     // 2.5e6 s
  EXPECT_NE(html.find("title=\"5,400 s\">1.50<"), std::string::npos);
  EXPECT_NE(html.find("1,000"), std::string::npos);
}

TEST(HtmlReportTest, LongSeriesAreDownsampledKeepingPeaks) {
  json summary = ReplaySummary(100000);
  // A single spike that thinning must not lose.
  summary["results"][0]["series"]["gpus_allocated"][54321][1] = 799999;
  const json data = InlineData(RenderHtmlReport(summary));
  for (const json& chart : data["charts"]) {
    for (const json& d : chart["datasets"]) {
      ASSERT_TRUE(d.contains("points")) << chart["id"];
      EXPECT_LE(d["points"].size(), 2000u) << chart["id"] << " " << d["label"];
    }
  }
  const json* gpus = ChartById(data, "chart-gpus-allocated");
  ASSERT_NE(gpus, nullptr);
  double peak = 0;
  for (const json& p : (*gpus)["datasets"][1]["points"]) peak = std::max(peak, p[1].get<double>());
  EXPECT_EQ(peak, 799999);
}

TEST(HtmlReportTest, FairShareChartsWhenQueuesPresent) {
  json summary = ReplaySummary();
  json share = json::array({{0, 0.2}, {3600, 0.35}, {7200, 0.3}});
  summary["results"][0]["queues"] = {{"team-a",
                                      {{"entitlement", 0.3},
                                       {"share_mean", 0.28},
                                       {"jct_seconds", {{"mean", 100.0}, {"p95", 900.0}}},
                                       {"queue_seconds", {{"mean", 10.0}, {"p95", 90.0}}},
                                       {"share_over_time", share}}},
                                     {"team-b", {{"entitlement", 0.7}, {"share_mean", 0.6}}}};
  summary["results"][1]["queues"] = {{"team-a", {{"entitlement", 0.3}, {"share_mean", 0.25}}},
                                     {"team-b", {{"entitlement", 0.7}, {"share_mean", 0.66}}}};
  const std::string html = RenderHtmlReport(summary);
  EXPECT_EQ(Count(html, "<canvas "),
            5u);  // 3 replay + mean share bars + share over time (1 policy)
  EXPECT_NE(html.find("id=\"chart-share-mean\""), std::string::npos);
  EXPECT_NE(html.find("id=\"chart-share-over-time-1\""), std::string::npos);
  EXPECT_NE(html.find("team-b"), std::string::npos);
  const json data = InlineData(html);
  const json* bars = ChartById(data, "chart-share-mean");
  ASSERT_NE(bars, nullptr);
  EXPECT_EQ((*bars)["labels"], json::array({"team-a", "team-b"}));
  EXPECT_EQ((*bars)["datasets"][0]["values"], json::array({30, 70}));  // entitlement, in %

  // One queue has no one to share with: no fair-share section at all.
  for (auto& r : summary["results"]) r["queues"].erase("team-b");
  const std::string single = RenderHtmlReport(summary);
  EXPECT_EQ(single.find("id=\"chart-share-mean\""), std::string::npos);
  EXPECT_EQ(single.find("<h2>Fair share</h2>"), std::string::npos);
  EXPECT_EQ(Count(single, "<canvas "), 3u);
}

TEST(HtmlReportTest, EscapesStringsFromTheSummary) {
  json summary = AllocationSummary();
  const std::string evil = "<script>alert(\"x\")</script>";
  summary["results"][0]["policy"] = evil;
  summary["trace"]["path"] = "/tmp/a&b<c>.csv";
  summary["experiment"] = "allocation";
  summary["generated_by"] = "<img src=x onerror=alert(1)>";
  summary["results"][1]["policy"] = "line\u2028sep\u2029para";
  const std::string html = RenderHtmlReport(summary);
  EXPECT_EQ(html.find(evil), std::string::npos);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("a&b<c>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("/tmp/a&amp;b&lt;c&gt;.csv"), std::string::npos);

  // The inline JSON holds the names verbatim once parsed, but never a raw "</" or U+2028/9.
  const std::size_t data_at = html.find("id=\"tessera-data\">");
  ASSERT_NE(data_at, std::string::npos);
  const std::string tail = html.substr(data_at, html.find("</script>", data_at) - data_at);
  EXPECT_EQ(tail.find("</"), std::string::npos);
  EXPECT_EQ(tail.find("\u2028"), std::string::npos);
  EXPECT_EQ(tail.find("\u2029"), std::string::npos);
  const json data = InlineData(html);
  const json* alloc = ChartById(data, "chart-allocation");
  ASSERT_NE(alloc, nullptr);
  EXPECT_EQ((*alloc)["datasets"][3]["label"], evil);
  EXPECT_EQ((*alloc)["datasets"][4]["label"], "line\u2028sep\u2029para (oracle)");
}

TEST(HtmlReportTest, UnknownExperimentShowsScalarTable) {
  json summary = {{"experiment", "failures"},
                  {"trace", {{"path", "t.csv"}, {"jobs", 5}}},
                  {"results",
                   {{{"policy", "fifo"},
                     {"ettr", 0.875},
                     {"restarts", 12},
                     {"checkpointing", true},
                     {"note", "ok"},
                     {"failures", {{"node", 3}, {"gpu", 7}}},
                     {"lost_gpu_seconds", 7200.0},
                     {"big_array", {1, 2, 3}}}}}};
  const std::string html = RenderHtmlReport(summary);
  EXPECT_EQ(Count(html, "<canvas "), 0u);
  // Field names for people (the field itself on hover), durations in the unit that suits them.
  for (const char* text :
       {">ETTR<", "0.875", ">Restarts<", "12", ">Checkpointing<", "yes", ">ok<", ">Failures<",
        ">Node<", ">GPU<", ">Lost GPU (h)<", "title=\"lost_gpu_seconds\"", "title=\"ettr\""}) {
    EXPECT_NE(html.find(text), std::string::npos) << text;
  }
  EXPECT_EQ(html.find(">lost_gpu_seconds"), std::string::npos);
  EXPECT_EQ(html.find("big_array"), std::string::npos);
  EXPECT_TRUE(InlineData(html)["charts"].empty());
}

TEST(HtmlReportTest, MissingOrMalformedFieldsDoNotCrash) {
  const json cases[] = {
      json(),
      json::array(),
      json("text"),
      json::object(),
      {{"experiment", 7}, {"results", "none"}},
      {{"experiment", "replay"}, {"results", json::array({1, "x", nullptr})}},
      {{"experiment", "replay"},
       {"cluster", {{"gpus", "many"}}},
       {"results",
        {{{"policy", 3},
          {"jct_seconds", "fast"},
          {"series",
           {{"jct_cdf", {{0, 0.1}, {-5, 0.2}, {"a", 1}, {1}, nullptr, {10, 0.5}}},
            {"gpus_allocated", "none"},
            {"queue_length", {{1.0, nullptr}}}}},
          {"queues",
           {{"a", 1}, {"b", {{"share_over_time", {{1, 2}}}}}, {"c", {{"share_mean", "half"}}}}}}}}},
      {{"experiment", "allocation"},
       {"results",
        {{{"policy", "p"},
          {"allocation_at_demand", json::array({nullptr, nullptr})},
          {"fragmentation_at_demand", "x"},
          {"allocation_at_demand_min", json::array({0.1})}}}}},
      {{"experiment", "allocation"},
       {"results", {{{"policy", "p"}, {"allocation_at_demand", {0.0, 0.5, "bad", 0.9}}}}}},
  };
  for (const json& summary : cases) {
    std::string html;
    ASSERT_NO_THROW(html = RenderHtmlReport(summary)) << summary.dump();
    EXPECT_TRUE(html.starts_with("<!DOCTYPE html>")) << summary.dump();
    EXPECT_NE(html.find("</html>"), std::string::npos);
    ASSERT_NO_THROW(InlineData(html)) << summary.dump();
  }
  // Only the last case has something to draw.
  const std::string html = RenderHtmlReport(cases[std::size(cases) - 1]);
  EXPECT_EQ(Count(html, "<canvas "), 1u);
  // The malformed replay draws its one valid CDF point and share series (of its two queues),
  // no GPU chart.
  const std::string replay = RenderHtmlReport(cases[6]);
  EXPECT_NE(replay.find("chart-jct-cdf"), std::string::npos);
  EXPECT_EQ(replay.find("chart-gpus-allocated"), std::string::npos);
  EXPECT_NE(replay.find("chart-share-over-time-1"), std::string::npos);
}

TEST(HtmlReportTest, InvalidUtf8IsReplacedNotThrown) {
  json summary = ReplaySummary(10);
  summary["results"][0]["policy"] = std::string("bad\xff\xfename");
  std::string html;
  ASSERT_NO_THROW(html = RenderHtmlReport(summary));
  EXPECT_NE(html.find("bad\xEF\xBF\xBD\xEF\xBF\xBDname"), std::string::npos);
  EXPECT_NO_THROW(InlineData(html));
}

TEST(HtmlUtilTest, HtmlEscape) {
  EXPECT_EQ(report::HtmlEscape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(report::HtmlEscape("héllo ✓"), "héllo ✓");
  EXPECT_EQ(report::HtmlEscape("x\xC0\xAFy"), "x\xEF\xBF\xBD\xEF\xBF\xBDy");  // overlong '/'
}

TEST(HtmlUtilTest, JsonForScriptRoundTrips) {
  const json value = {{"s", "</script><!-- & \u2028 \u2029 é"}, {"n", 1.5}};
  const std::string text = report::JsonForScript(value);
  EXPECT_EQ(text.find('<'), std::string::npos);
  EXPECT_EQ(text.find('>'), std::string::npos);
  EXPECT_EQ(text.find('&'), std::string::npos);
  EXPECT_EQ(text.find("\u2028"), std::string::npos);
  EXPECT_EQ(json::parse(text), value);
}

TEST(HtmlUtilTest, DownsampleKeepsEndsAndExtremes) {
  std::vector<report::Point> points;
  for (int i = 0; i < 10000; ++i) points.push_back({double(i), double(i % 100)});
  points[5000].y = -50;
  points[7777].y = 1000;
  const auto thin = report::Downsample(points, 2000);
  ASSERT_LE(thin.size(), 2000u);
  EXPECT_EQ(thin.front().x, 0);
  EXPECT_EQ(thin.back().x, 9999);
  bool low = false, high = false;
  for (std::size_t i = 1; i < thin.size(); ++i) {
    EXPECT_LT(thin[i - 1].x, thin[i].x);
    low |= thin[i].y == -50;
    high |= thin[i].y == 1000;
  }
  EXPECT_TRUE(low);
  EXPECT_TRUE(high);
  EXPECT_EQ(report::Downsample(points, 20000).size(), points.size());
}

TEST(HtmlUtilTest, FormatNumber) {
  EXPECT_EQ(report::FormatNumber(1234567), "1,234,567");
  EXPECT_EQ(report::FormatNumber(-1234.4), "-1,234");
  EXPECT_EQ(report::FormatNumber(12.345), "12.3");
  EXPECT_EQ(report::FormatNumber(1.2345), "1.23");
  EXPECT_EQ(report::FormatNumber(0.045678), "0.0457");
  EXPECT_EQ(report::FormatNumber(0), "0");
  EXPECT_EQ(report::RoundSignificant(0.123456789, 3), 0.123);
  EXPECT_EQ(report::RoundSignificant(123456789, 3), 123000000);
}

TEST(HtmlReportTest, ManyQueuesShowOnlyTheChartedOnes) {
  json summary = ReplaySummary();
  json queues = json::object();
  for (int i = 0; i < 30; ++i) {
    json q = {{"entitlement", 1.0 / 30}, {"share_mean", 0.01}};
    if (i < 2) q["share_over_time"] = json::array({{0, 0.1}, {60, 0.2}});
    queues["user-" + std::to_string(i)] = q;
  }
  summary["results"][0]["queues"] = queues;
  const std::string html = RenderHtmlReport(summary);
  EXPECT_NE(html.find("<td>user-0</td>"), std::string::npos);
  EXPECT_NE(html.find("<td>user-1</td>"), std::string::npos);
  EXPECT_EQ(html.find("<td>user-2</td>"), std::string::npos);
}

}  // namespace
}  // namespace tessera
