// ctest-labels: e2e
// An InferenceService whose replicas are tessera-engine-sim, run by a live Tessera cluster
// (tesserad + agents on 127.0.0.1), with tessera-gateway in front finding its replicas from the
// controller: each replica listens on the TESSERA_PORT its agent set, the gateway routes with
// the policy the spec names, and a replica that is cancelled leaves rotation.
#include <gtest/gtest.h>

#include "gateway/serving_harness.h"
#include "server/live_harness.h"

namespace tessera::testing {
namespace {

using Json = nlohmann::json;

std::string ServiceSpec() {
  return "apiVersion: tessera/v1\nkind: InferenceService\nmetadata: {name: demo-serve, queue: "
         "serving}\nspec:\n  replicas: 2\n  gpusPerReplica: 1\n  gracePeriodSeconds: 2\n"
         "  routing: {policy: prefix, blockTokens: 16}\n  slo: {ttftMs: 2000, tbtMs: 200}\n"
         "  command: [" +
         Json(BinDir() + "/tessera-engine-sim").dump() +
         ", --model, demo-serve, --time-scale, '0.05']\n";
}

int ReadyReplicas(const std::string& gateway_url) {
  Reply r = GetPath(gateway_url, "/v1/services");
  if (!r.json.is_object() || r.json["services"].empty()) return 0;
  int ready = 0;
  for (const auto& replica : r.json["services"][0]["replicas"]) ready += replica["ready"] == true;
  return ready;
}

TEST(GatewayE2E, RoutesToEngineSimReplicasDiscoveredFromTheController) {
  Watchdog dog(std::chrono::seconds(120), "GatewayE2E");
  // The controller knows the gateway (--gateway, on a port chosen before either starts), so
  // `tessera describe` can show it and ask it for the replicas' readiness.
  const int gateway_port = FreeLoopbackPort();
  const std::string gateway_url = "http://127.0.0.1:" + std::to_string(gateway_port);
  LiveCluster cluster(LiveCluster::Options{
      .agents = 2, .gpus = "1xH100", .controller_args = {"--gateway", gateway_url}});
  ASSERT_TRUE(cluster.WaitForReadyNodes(2)) << cluster.Logs();
  auto submitted = cluster.Submit(ServiceSpec());
  ASSERT_EQ(submitted.status, 201) << submitted.body;
  ASSERT_TRUE(cluster.WaitForPhase("serving", "demo-serve", "Running", 30)) << cluster.Logs();

  ServingHarness h;
  ServingProcess gw;
  {
    // The gateway in discovery mode: --server, no --backend.
    gw = h.StartGatewayAt(gateway_port, {"--server", cluster.url()});
  }
  ASSERT_GT(gw.port, 0) << h.Logs();
  ASSERT_TRUE(WaitFor([&] { return ReadyReplicas(gw.url) == 2; }, 30))
      << GetPath(gw.url, "/v1/services").body << h.Logs() << cluster.Logs();
  Reply services = GetPath(gw.url, "/v1/services");
  EXPECT_EQ(services.json["services"][0]["name"], "serving/demo-serve");
  EXPECT_EQ(services.json["services"][0]["policy"], "prefix");
  EXPECT_EQ(services.json["services"][0]["sloTtftMs"], 2000);

  // describe: the gateway's URL and each replica's endpoint, ready as the gateway sees it.
  const Json job = cluster.Job("serving", "demo-serve");
  std::vector<std::string> endpoints;
  for (const auto& t : job["taskList"]) endpoints.push_back(t.value("endpoint", ""));
  ASSERT_EQ(endpoints.size(), 2u) << job.dump();
  CommandResult described = RunCommand(
      {BinDir() + "/tessera", "describe", "job", "demo-serve", "--server", cluster.url()}, 20);
  EXPECT_EQ(described.exit_code, 0) << described.err;
  EXPECT_NE(described.out.find("Gateway:  " + gateway_url + "\n"), std::string::npos)
      << described.out;
  for (const std::string& e : endpoints) {
    EXPECT_NE(described.out.find(e + "   yes     running"), std::string::npos) << e << "\n"
                                                                               << described.out;
  }
  CommandResult as_json = RunCommand({BinDir() + "/tessera", "describe", "job", "demo-serve",
                                      "--server", cluster.url(), "-o", "json"},
                                     20);
  const Json view = Json::parse(as_json.out, nullptr, false);
  ASSERT_TRUE(view.is_object()) << as_json.out << as_json.err;
  EXPECT_EQ(view["serving"]["gateway"], gateway_url);
  EXPECT_EQ(view["serving"]["readinessFrom"], "gateway");
  ASSERT_EQ(view["serving"]["replicas"].size(), 2u) << view["serving"].dump();
  for (const auto& r : view["serving"]["replicas"]) EXPECT_EQ(r["ready"], true) << r.dump();

  const std::string body =
      Json{{"model", "demo-serve"}, {"prompt", Words(48)}, {"max_tokens", 3}}.dump();
  Reply first = PostJson(gw.url, "/v1/completions", body);
  ASSERT_EQ(first.status, 200) << first.body << h.Logs();
  EXPECT_EQ(first.json["choices"][0]["text"], " w0 w1 w2");
  // The same prompt goes back to the replica holding it (prefix policy), which has it cached.
  Reply second = PostJson(gw.url, "/v1/completions", body);
  ASSERT_EQ(second.status, 200);
  // At least the 2 blocks before the last prompt token (all 3 once the engine has published
  // the block holding it).
  const int cached = second.json["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>();
  EXPECT_TRUE(cached == 32 || cached == 48) << cached;
  const std::string stream = Json{
      {"model", "demo-serve"},
      {"prompt", Words(8, 900)},
      {"max_tokens", 2},
      {"stream", true}}.dump();
  Reply streamed = PostJson(gw.url, "/v1/completions", stream);
  ASSERT_EQ(streamed.status, 200);
  EXPECT_EQ(SseData(streamed.body).back(), "[DONE]");

  // Cancelled: its replicas stop and the gateway takes them out.
  EXPECT_EQ(cluster.Delete("/v1/jobs/serving/demo-serve").status, 202);
  EXPECT_TRUE(WaitFor([&] { return ReadyReplicas(gw.url) == 0; }, 30))
      << GetPath(gw.url, "/v1/services").body;
  // 503 (no ready replica) while the job stops; 404 once it has finished and left discovery.
  const int status = PostJson(gw.url, "/v1/completions", body).status;
  EXPECT_TRUE(status == 503 || status == 404) << status;
  EXPECT_TRUE(WaitFor([&] { return PostJson(gw.url, "/v1/completions", body).status == 404; }, 30));
}

}  // namespace
}  // namespace tessera::testing
