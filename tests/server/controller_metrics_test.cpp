// The controller's /metrics text in process, on a real SqliteStore and a hand-driven clock: a
// bind and a preemption are counted by kind, the victim once, the submit-to-bind latency lands
// in its bucket, jobs are gauged by queue, kind and phase, nodes and queues are reported, and
// route labels stay bounded whatever the path.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <optional>
#include <sstream>

#include "server/controller.h"
#include "store/sqlite_store.h"

namespace tessera {
namespace {

// The value of the sample written exactly as `series` (name and labels), if there is one.
std::optional<double> SampleOf(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 &&
        line[series.size()] == ' ')
      return std::stod(line.substr(series.size() + 1));
  }
  return std::nullopt;
}

class ControllerMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera-metrics-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto store = SqliteStore::Open(dir_ + "/state.db");
    ASSERT_TRUE(store.has_value()) << store.error().message;
    store_ = std::move(*store);
    ControllerOptions options;
    options.now = [this] { return now_.load(); };
    options.scheduler.priority_preemption = true;
    options.metrics_gather_interval_ms = 0;  // every scrape gathers afresh
    auto c = Controller::Create(store_.get(), options);
    ASSERT_TRUE(c.has_value()) << c.error().message;
    controller_ = std::move(*c);
  }
  void TearDown() override {
    controller_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Register(const std::string& node) {
    NodeRegistration reg;
    reg.node = node;
    reg.address = "10.0.0.1";
    reg.agent_url = "http://127.0.0.1:1";
    reg.simulated = true;
    reg.cpu_milli = 64000;
    reg.memory_mib = 512 * 1024;
    for (int i = 0; i < 4; ++i) reg.gpus.push_back({i, "H100", "simulated H100", "SIM", 81920});
    ASSERT_TRUE(controller_->Register(reg).has_value());
  }
  void Submit(const std::string& name, int priority) {
    auto r =
        controller_->Submit("apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: " + name +
                            ", queue: nlp/sft}\nspec: {priority: " + std::to_string(priority) +
                            ", workers: 1, gpusPerWorker: 4, command: [run]}\n");
    ASSERT_TRUE(r.has_value()) << r.error().error.message;
  }

  std::string dir_;
  std::atomic<Tick> now_{1'000'000};
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<Controller> controller_;
};

// One node of 4 GPUs. "victim" (priority 0) is submitted at t and bound 3 s later: one bind,
// latency 3 s (bucket le=5 but not le=1). "urgent" (priority 100) then preempts it: a preempt
// decision (one victim) and a bind of urgent onto the victim's GPUs, which the controller
// defers until the victim has exited, so urgent stays Pending: binds 2, of them 1 deferred,
// and one latency observation only.
TEST_F(ControllerMetricsTest, DecisionsVictimsAndLatencyAreCounted) {
  Register("node-0");
  Submit("victim", 0);
  now_ += 3000;
  ASSERT_EQ(controller_->RunSchedulingCycle(), 1);
  Submit("urgent", 100);
  EXPECT_EQ(controller_->RunSchedulingCycle(), 0);

  const std::string text = controller_->MetricsText();
  EXPECT_EQ(SampleOf(text, "tessera_scheduling_decisions_total{kind=\"bind\"}"), 2) << text;
  EXPECT_EQ(SampleOf(text, "tessera_scheduling_decisions_not_applied_total{reason=\"deferred\"}"),
            1);
  EXPECT_EQ(SampleOf(text, "tessera_scheduling_decisions_total{kind=\"preempt\"}"), 1);
  EXPECT_EQ(SampleOf(text, "tessera_scheduling_decisions_total{kind=\"resize\"}"), 0);
  EXPECT_EQ(SampleOf(text, "tessera_preemption_victims_total"), 1);
  EXPECT_EQ(SampleOf(text, "tessera_job_scheduling_latency_seconds_count{queue=\"nlp/sft\"}"), 1);
  EXPECT_EQ(SampleOf(text, "tessera_job_scheduling_latency_seconds_sum{queue=\"nlp/sft\"}"), 3);
  EXPECT_EQ(
      SampleOf(text, "tessera_job_scheduling_latency_seconds_bucket{queue=\"nlp/sft\",le=\"1\"}"),
      0);
  EXPECT_EQ(
      SampleOf(text, "tessera_job_scheduling_latency_seconds_bucket{queue=\"nlp/sft\",le=\"5\"}"),
      1);
  EXPECT_EQ(SampleOf(text, "tessera_scheduling_cycle_duration_seconds_count"), 2);
  // Both cycles had pending work: both are among the recent ones timed.
  EXPECT_EQ(SampleOf(text, "tessera_scheduling_cycle_recent_cycles"), 2);
  EXPECT_GT(
      SampleOf(text, "tessera_scheduling_cycle_recent_seconds{percentile=\"99\"}").value_or(0), 0);
  EXPECT_GE(SampleOf(text, "tessera_store_commit_duration_seconds_count").value_or(0), 3);
  EXPECT_EQ(
      SampleOf(text, "tessera_jobs{queue=\"nlp/sft\",kind=\"TrainingJob\",phase=\"Pending\"}"), 1);
  EXPECT_EQ(
      SampleOf(text, "tessera_jobs{queue=\"nlp/sft\",kind=\"TrainingJob\",phase=\"Restarting\"}"),
      1);
  EXPECT_EQ(SampleOf(text, "tessera_queue_allocated_gpus{queue=\"nlp/sft\"}"), 4);
  EXPECT_EQ(SampleOf(text, "tessera_queue_pending_jobs{queue=\"nlp/sft\"}"), 1);
  EXPECT_EQ(SampleOf(text, "tessera_node_gpus_allocated{node=\"node-0\",simulated=\"true\"}"), 4);
  EXPECT_EQ(SampleOf(text, "tessera_node_schedulable{node=\"node-0\",simulated=\"true\"}"), 1);
  EXPECT_EQ(SampleOf(text, "tessera_nodes{status=\"Ready\"}"), 1);
}

TEST_F(ControllerMetricsTest, OffRecordsNothing) {
  controller_->metrics().set_enabled(false);
  Register("node-0");
  Submit("victim", 0);
  ASSERT_EQ(controller_->RunSchedulingCycle(), 1);
  const std::string text = controller_->MetricsText();
  EXPECT_EQ(SampleOf(text, "tessera_scheduling_decisions_total{kind=\"bind\"}"), 0);
  EXPECT_EQ(SampleOf(text, "tessera_scheduling_cycle_duration_seconds_count"), 0);
}

TEST(ApiRouteLabelTest, PathsBecomeTheirRoutePatterns) {
  EXPECT_EQ(ApiRouteLabel("/v1/jobs"), "/v1/jobs");
  EXPECT_EQ(ApiRouteLabel("/v1/jobs?phase=Running"), "/v1/jobs");
  EXPECT_EQ(ApiRouteLabel("/v1/jobs/nlp/sft/llama"), "/v1/jobs/{job}");
  EXPECT_EQ(ApiRouteLabel("/v1/logs/default/x"), "/v1/logs/{job}");
  EXPECT_EQ(ApiRouteLabel("/v1/agents/node-0/heartbeat"), "/v1/agents/{node}/heartbeat");
  EXPECT_EQ(ApiRouteLabel("/v1/agents/heartbeat"), "/v1/agents/heartbeat");
  EXPECT_EQ(ApiRouteLabel("/v1/agents/node-0/tasks/17/status"),
            "/v1/agents/{node}/tasks/{task}/status");
  EXPECT_EQ(ApiRouteLabel("/metrics"), "/metrics");
  // The dashboard's routes, each its own label.
  EXPECT_EQ(ApiRouteLabel("/v1/nodes/changes?since=17"), "/v1/nodes/changes");
  EXPECT_EQ(ApiRouteLabel("/v1/queues/history?sinceMs=0"), "/v1/queues/history");
  EXPECT_EQ(ApiRouteLabel("/v1/usage"), "/v1/usage");
  // Anything else is one label, so that random paths cannot grow the series.
  EXPECT_EQ(ApiRouteLabel("/v1/nonsense"), "other");
  EXPECT_EQ(ApiRouteLabel("/etc/passwd"), "other");
  EXPECT_EQ(ApiRouteLabel("/v1/agents/x/y"), "other");
}

}  // namespace
}  // namespace tessera
