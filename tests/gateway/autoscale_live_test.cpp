// ctest-labels: inference-live
// Autoscaled InferenceServices live (docs/autoscaling.md): tesserad with agents on 127.0.0.1,
// engine-sim replicas, tessera-gateway in front finding them from the controller. A load step
// through the gateway makes a second replica start and serve (and the reaction time is
// printed: load step -> a request answered by the new replica); load falling makes it drain
// (out of the gateway's set, its requests finished) and stop, with no request failing.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>

#include "core/metrics_scrape.h"
#include "gateway/serving_harness.h"
#include "server/live_harness.h"

namespace tessera::testing {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// in-flight-requests, target 2 per replica, `min`..2 replicas; scaling down after 1 s.
std::string ServiceSpec(int min = 1) {
  return "apiVersion: tessera/v1\nkind: InferenceService\nmetadata: {name: chat, queue: "
         "serving}\nspec:\n  replicas: {min: " +
         std::to_string(min) +
         ", max: 2}\n  gpusPerReplica: 1\n"
         "  gracePeriodSeconds: 2\n"
         "  autoscaling: {metric: in-flight-requests, target: 2, "
         "scaleDownStabilizationSeconds: 1}\n"
         "  command: [" +
         Json(BinDir() + "/tessera-engine-sim").dump() + ", --model, chat]\n";
}

// The gateway's ready replicas of the service; nullopt while it does not list the service yet
// (its discovery follows the controller's events, later on a loaded machine).
std::optional<std::vector<std::string>> ListedReadyUrls(const std::string& gateway_url) {
  Reply r = GetPath(gateway_url, "/v1/services");
  if (!r.json.is_object() || !r.json.contains("services") || r.json["services"].empty())
    return std::nullopt;
  std::vector<std::string> out;
  for (const auto& replica : r.json["services"][0]["replicas"])
    if (replica["ready"] == true) out.push_back(replica["url"]);
  return out;
}

std::vector<std::string> ReadyUrls(const std::string& gateway_url) {
  return ListedReadyUrls(gateway_url).value_or(std::vector<std::string>{});
}

double Successes(const std::string& replica_url) {
  Reply r = GetPath(replica_url, "/metrics");
  double n = 0;
  for (const auto& s : ParseMetricsText(r.body, {"vllm:request_success_total"})) n += s.value;
  return n;
}

// `clients` threads, each sending one completion after another through the gateway until
// stopped; counts answers and failures.
class Load {
 public:
  Load(std::string gateway_url, int clients) : url_(std::move(gateway_url)) {
    for (int i = 0; i < clients; ++i) threads_.emplace_back([this, i] { Run(i); });
  }
  ~Load() { Stop(); }
  void Stop() {
    stop_ = true;
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }
  int ok() const { return ok_; }
  int failed() const { return failed_; }
  std::string last_failure() const {
    std::lock_guard lock(mu_);
    return last_failure_;
  }

 private:
  void Run(int client) {
    for (int n = 0; !stop_; ++n) {
      const std::string body = Json{
          {"model", "chat"},
          {"prompt", Words(64, 1000 * client + n)},
          {"max_tokens", 48}}.dump();
      Reply r = PostJson(url_, "/v1/completions", body, 20);
      if (r.status == 200) {
        ++ok_;
      } else {
        ++failed_;
        std::lock_guard lock(mu_);
        last_failure_ = std::to_string(r.status) + " " + r.body;
      }
    }
  }
  std::string url_;
  std::atomic<bool> stop_{false};
  std::atomic<int> ok_{0}, failed_{0};
  mutable std::mutex mu_;
  std::string last_failure_;
  std::vector<std::thread> threads_;
};

// tesserad reading the gateway's counts (--gateway, on a port chosen before either starts),
// deciding every 250 ms; two agents of one simulated H100 each.
struct Serving {
  int gateway_port = FreeLoopbackPort();
  LiveCluster cluster{LiveCluster::Options{
      .agents = 2,
      .gpus = "1xH100",
      .controller_args = {"--autoscale-interval-ms", "250", "--gateway",
                          "http://127.0.0.1:" + std::to_string(gateway_port)}}};
  ServingHarness h;
  ServingProcess gw;

  bool Start(int min = 1) {
    if (!cluster.WaitForReadyNodes(2)) return false;
    if (cluster.Submit(ServiceSpec(min)).status != 201) return false;
    gw = h.StartGatewayAt(gateway_port,
                          {"--server", cluster.url(), "--cold-start-wait-ms", "15000"});
    // Listed with `min` ready: a request sent before the gateway lists the service would be
    // refused as for an unknown model (the from-zero test's flake under load).
    return GetHealth(gw.url) && WaitFor(
                                    [&] {
                                      const auto ready = ListedReadyUrls(gw.url);
                                      return ready &&
                                             ready->size() == static_cast<std::size_t>(min);
                                    },
                                    15);
  }
  std::string Logs() { return h.Logs() + cluster.Logs(); }
};

// The replica URL in `now` that is not `first`, or "".
std::string Other(const std::vector<std::string>& now, const std::string& first) {
  for (const auto& u : now)
    if (u != first) return u;
  return "";
}

TEST(AutoscaleLive, LoadStepStartsAReplicaThatServes) {
  Watchdog dog(std::chrono::seconds(60), "AutoscaleLive.LoadStep");
  Serving s;
  ASSERT_TRUE(s.Start()) << s.Logs();
  const std::string first = ReadyUrls(s.gw.url).at(0);
  // One client: 1 in flight against a target of 2, no scaling.
  {
    Load light(s.gw.url, 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    light.Stop();
    EXPECT_EQ(ReadyUrls(s.gw.url).size(), 1u);
    EXPECT_GT(light.ok(), 0);
    EXPECT_EQ(light.failed(), 0) << light.last_failure();
  }
  // The step: 6 clients, 3× the target on one replica → 2 replicas (the max).
  const auto step = Clock::now();
  Load heavy(s.gw.url, 6);
  std::string second;
  ASSERT_TRUE(WaitFor(
      [&] {
        second = Other(ReadyUrls(s.gw.url), first);
        return !second.empty() && Successes(second) >= 1;
      },
      15))
      << GetPath(s.gw.url, "/v1/services").body << s.Logs();
  const double reaction = std::chrono::duration<double>(Clock::now() - step).count();
  std::printf(
      "scale-up reaction (load step -> first request answered by the new replica): %.2f s\n",
      reaction);
  // Read while the load holds: once it stops, the 1 s scale-down window may pass before a
  // loaded machine gets here (stopping waits for the clients' requests in flight), and the
  // second replica drains and leaves its node.
  const Json job = s.cluster.Job("serving", "chat");
  const std::string metrics = s.cluster.Get("/metrics").body;
  // tessera top nodes shows the reported figures for both replicas' nodes (each engine writes
  // its usage file every 500 ms, the agents report at each heartbeat).
  CommandResult top;
  const bool both_reported = WaitFor(
      [&] {
        top = RunCommand(
            {BinDir() + "/tessera", "top", "nodes", "--server", s.cluster.url(), "-o", "json"}, 20);
        const Json nodes = Json::parse(top.out, nullptr, false);
        int reported = 0;
        for (const auto& n : nodes) reported += n.value("usageSource", "") == "reported";
        return top.exit_code == 0 && reported == 2;
      },
      5);
  heavy.Stop();
  EXPECT_TRUE(both_reported) << top.out << top.err;
  EXPECT_EQ(heavy.failed(), 0) << heavy.last_failure();
  EXPECT_EQ(job["autoscaling"]["desiredReplicas"], 2) << job.dump();
  bool scaled_event = false;
  for (const auto& e : job["events"])
    scaled_event |= e.value("type", "") == "ServiceScaled" &&
                    e.value("message", "").starts_with("replicas 1 -> 2: in-flight-requests");
  EXPECT_TRUE(scaled_event) << job["events"].dump();
  EXPECT_NE(metrics.find("tessera_service_replicas{service=\"serving/chat\",state=\"desired\"} 2"),
            std::string::npos)
      << metrics;
  // The engines reported their busy fraction through their usage files (docs/gpu-usage.md).
  double busiest = 0;
  for (const auto& m : ParseMetricsText(metrics, {"tessera_gpu_utilization_window_max_ratio"}))
    busiest = std::max(busiest, m.value);
  EXPECT_GT(busiest, 0.05) << metrics;
}

TEST(AutoscaleLive, LoadFallingDrainsAReplicaWithNoFailedRequest) {
  Watchdog dog(std::chrono::seconds(60), "AutoscaleLive.LoadFalling");
  Serving s;
  ASSERT_TRUE(s.Start()) << s.Logs();
  const std::string first = ReadyUrls(s.gw.url).at(0);
  std::string second;
  {
    Load heavy(s.gw.url, 6);
    ASSERT_TRUE(WaitFor(
        [&] {
          second = Other(ReadyUrls(s.gw.url), first);
          return !second.empty() && Successes(second) >= 1;
        },
        15))
        << s.Logs();
    heavy.Stop();
    EXPECT_EQ(heavy.failed(), 0) << heavy.last_failure();
  }
  // One client keeps going while the service scales in: nothing it sends may fail.
  Load light(s.gw.url, 1);
  ASSERT_TRUE(WaitFor(
      [&] {
        const auto ready = ReadyUrls(s.gw.url);
        return ready.size() == 1 && ready[0] == first;
      },
      10))
      << GetPath(s.gw.url, "/v1/services").body << s.Logs();
  // The drained replica stops: its unit goes back to Pending, its task ends.
  ASSERT_TRUE(WaitFor(
      [&] {
        const Json job = s.cluster.Job("serving", "chat");
        return job["units"].size() == 2 && job["units"][1]["phase"] == "Pending";
      },
      10))
      << s.cluster.Job("serving", "chat").dump() << s.Logs();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  light.Stop();
  EXPECT_GT(light.ok(), 0);
  EXPECT_EQ(light.failed(), 0) << light.last_failure();
  const Json job = s.cluster.Job("serving", "chat");
  EXPECT_EQ(job["autoscaling"]["desiredReplicas"], 1);
  bool draining = false, drained = false;
  for (const auto& e : job["events"]) {
    draining |= e.value("type", "") == "ReplicaDraining";
    drained |= e.value("message", "").find("drained") != std::string::npos;
  }
  EXPECT_TRUE(draining && drained) << job["events"].dump();
  EXPECT_EQ(job["phase"], "Running");
}

TEST(AutoscaleLive, FirstRequestScalesFromZero) {
  Watchdog dog(std::chrono::seconds(60), "AutoscaleLive.FromZero");
  Serving s;
  ASSERT_TRUE(s.Start(/*min=*/0)) << s.Logs();
  EXPECT_TRUE(ReadyUrls(s.gw.url).empty());
  const auto sent = Clock::now();
  Reply r = PostJson(s.gw.url, "/v1/completions",
                     Json{{"model", "chat"}, {"prompt", Words(16)}, {"max_tokens", 4}}.dump(), 20);
  const double cold = std::chrono::duration<double>(Clock::now() - sent).count();
  ASSERT_EQ(r.status, 200) << r.body << s.Logs();
  std::printf("scale from zero (first request -> its answer): %.2f s\n", cold);
  const Json scaled = s.cluster.Job("serving", "chat");
  bool from_zero = false;
  for (const auto& e : scaled["events"])
    from_zero |= e.value("message", "").starts_with("replicas 0 -> 1");
  EXPECT_TRUE(from_zero) << scaled["events"].dump();
  // Idle again: back to zero after the scale-down window.
  EXPECT_TRUE(WaitFor(
      [&] {
        const Json job = s.cluster.Job("serving", "chat");
        return job["units"][0]["phase"] == "Pending" && ReadyUrls(s.gw.url).empty();
      },
      15))
      << s.cluster.Job("serving", "chat").dump();
}

}  // namespace
}  // namespace tessera::testing
