// ctest-labels: integration
// Debian's real Prometheus scrapes a `tessera up` cluster (tesserad and two agents with
// simulated GPUs) together with a tessera-engine-sim and a tessera-gateway, all on 127.0.0.1,
// every second; the test waits for the scrapes and asks Prometheus' HTTP API for the series
// docs/metrics.md lists. Every endpoint's tessera_ families also pass `promtool check metrics`
// (the engine's vLLM-named families, with colons, are left out: promtool's linter rejects them).
// Authentication is on (tessera up's default): Prometheus scrapes the controller over HTTPS
// with tessera up's CA and the metrics identity's bearer_token_file; without a token /metrics
// is 401.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "server/process_harness.h"

namespace tessera::testing {
namespace {

using Json = nlohmann::json;
using namespace std::chrono_literals;

// A bearer token and the CA of an https URL; empty: none.
struct Access {
  std::string token;
  std::string ca_file;
};

std::string Get(const std::string& url, const std::string& path, const Access& access = {},
                int* status = nullptr) {
  httplib::Client c(url);
  if (!access.token.empty()) c.set_bearer_token_auth(access.token);
  if (!access.ca_file.empty()) {
    c.set_ca_cert_path(access.ca_file);
    c.enable_server_certificate_verification(true);
  }
  c.set_connection_timeout(2, 0);
  c.set_read_timeout(10, 0);
  auto r = c.Get(path);
  if (status != nullptr) *status = r ? r->status : 0;
  return r ? r->body : "";
}

int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// The families whose names start with tessera_ (their HELP, TYPE and sample lines).
std::string TesseraFamilies(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) {
    std::string name = line;
    if (line.starts_with("# HELP ") || line.starts_with("# TYPE ")) name = line.substr(7);
    if (name.starts_with("tessera_")) out += line + "\n";
  }
  return out;
}

std::string HostPort(const std::string& url) { return url.substr(url.find("://") + 3); }

class PrometheusScrapeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* exe : {"/usr/bin/prometheus", "/usr/bin/promtool"}) {
      if (::access(exe, X_OK) != 0)
        GTEST_SKIP() << exe << " missing: run scripts/install-deps.sh (Debian's prometheus)";
    }
    tessera_ = BinDir() + "/tessera";
  }
  void TearDown() override {
    for (pid_t pid : pids_) Stop(pid, SIGTERM, 5000);
    if (up_) RunCommand({tessera_, "down", "--state", state_.path()}, 60);
  }
  pid_t StartWithPortFile(std::vector<std::string> argv, const std::string& name, int* port) {
    const std::string port_file = dir_.path() + "/" + name + ".port";
    argv.insert(argv.end(), {"--port", "0", "--port-file", port_file});
    const pid_t pid = Spawn(argv, dir_.path() + "/" + name + ".log");
    pids_.push_back(pid);
    WaitFor([&] { return !ReadFile(port_file).empty() || !ProcessAlive(pid); }, 20);
    const std::string text = ReadFile(port_file);
    *port = text.empty() ? 0 : std::stoi(text);
    return pid;
  }
  // promtool's lint of one endpoint's tessera_ families; empty when it passes.
  std::string Lint(const std::string& url, const Access& access = {}) {
    const std::string text = TesseraFamilies(Get(url, "/metrics", access));
    if (text.empty()) return url + ": no tessera_ family";
    auto r = RunCommand({"/usr/bin/promtool", "check", "metrics"}, 30, text);
    return r.exit_code == 0 ? "" : url + ": " + r.out + r.err;
  }

  std::string tessera_;
  TempDir state_{"tessera-prom-cluster"};
  TempDir dir_{"tessera-prom"};
  std::vector<pid_t> pids_;
  bool up_ = false;
};

TEST_F(PrometheusScrapeTest, ScrapesEveryDaemonAndFindsTheDocumentedSeries) {
  Watchdog watchdog(120s, "prometheus scrape test");
  auto up = RunCommand(
      {tessera_, "up", "--state", state_.path(), "--agents", "2", "--gpus", "4xH100"}, 60);
  up_ = true;
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  std::string controller = ReadFile(state_.path() + "/endpoint");
  while (!controller.empty() && std::isspace(static_cast<unsigned char>(controller.back())))
    controller.pop_back();
  ASSERT_FALSE(controller.empty());
  ASSERT_TRUE(controller.starts_with("https://")) << controller;
  const std::string metrics_token_file = state_.path() + "/auth/metrics.token";
  std::string token = ReadFile(metrics_token_file);
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  const std::string ca_file = state_.path() + "/tls/ca.crt";
  const Access scraper{token, ca_file};
  int anonymous = 0;
  Get(controller, "/metrics", Access{"", ca_file}, &anonymous);
  EXPECT_EQ(anonymous, 401);
  std::ofstream(dir_.path() + "/job.yaml")
      << "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: scraped, queue: "
         "research}\nspec: {workers: 1, gpusPerWorker: 2, command: [sleep, '60']}\n";
  auto submit = RunCommand({tessera_, "submit", "-f", dir_.path() + "/job.yaml"}, 30, "",
                           {"TESSERA_STATE=" + state_.path()});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;

  std::set<std::string> agents;
  std::string admin = ReadFile(state_.path() + "/auth/admin.token");
  while (!admin.empty() && std::isspace(static_cast<unsigned char>(admin.back()))) admin.pop_back();
  const Json nodes =
      Json::parse(Get(controller, "/v1/nodes", Access{admin, ca_file}), nullptr, false);
  ASSERT_TRUE(nodes.is_object());
  for (const auto& n : nodes["nodes"]) agents.insert(n["agentUrl"].get<std::string>());
  ASSERT_EQ(agents.size(), 2u);
  int engine_port = 0, gateway_port = 0;
  StartWithPortFile({BinDir() + "/tessera-engine-sim", "--model", "sim-model"}, "engine",
                    &engine_port);
  ASSERT_GT(engine_port, 0) << ReadFile(dir_.path() + "/engine.log");
  const std::string engine = "http://127.0.0.1:" + std::to_string(engine_port);
  StartWithPortFile({BinDir() + "/tessera-gateway", "--backend", engine}, "gateway", &gateway_port);
  ASSERT_GT(gateway_port, 0) << ReadFile(dir_.path() + "/gateway.log");
  const std::string gateway = "http://127.0.0.1:" + std::to_string(gateway_port);

  // Wait until the job runs, so that the bind and the GPU series have something to show.
  ASSERT_TRUE(WaitFor(
      [&] {
        return Get(controller, "/metrics", scraper)
                   .find(
                       "tessera_jobs{queue=\"research\",kind=\"TrainingJob\",phase=\"Running\"} "
                       "1") != std::string::npos;
      },
      20));

  EXPECT_EQ(Lint(controller, scraper), "");
  for (const std::string& url : {engine, gateway}) EXPECT_EQ(Lint(url), "");
  // The agents serve HTTPS (tessera up's agent certificate); metrics need no client certificate.
  for (const std::string& url : {*agents.begin(), *agents.rbegin()})
    EXPECT_EQ(Lint(url, {"", ca_file}), "");

  std::string targets;
  auto job = [&](const std::string& name, const std::vector<std::string>& urls) {
    targets += "  - job_name: " + name + "\n    static_configs:\n      - targets: [";
    for (std::size_t i = 0; i < urls.size(); ++i)
      targets += (i ? ", '" : "'") + HostPort(urls[i]) + "'";
    targets += "]\n";
  };
  job("tesserad", {controller});
  targets += "    scheme: https\n    bearer_token_file: " + metrics_token_file +
             "\n    tls_config: {ca_file: " + ca_file + "}\n";
  job("tessera-agent", {agents.begin(), agents.end()});
  targets += "    scheme: https\n    tls_config: {ca_file: " + ca_file + "}\n";
  job("tessera-engine-sim", {engine});
  job("tessera-gateway", {gateway});
  std::ofstream(dir_.path() + "/prometheus.yml")
      << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n"
      << targets;
  const int prom_port = FreePort();
  const std::string prometheus = "http://127.0.0.1:" + std::to_string(prom_port);
  pids_.push_back(
      Spawn({"/usr/bin/prometheus", "--config.file=" + dir_.path() + "/prometheus.yml",
             "--storage.tsdb.path=" + dir_.path() + "/tsdb",
             "--web.listen-address=127.0.0.1:" + std::to_string(prom_port), "--log.level=warn"},
            dir_.path() + "/prometheus.log"));

  // Every target up, as Prometheus' own `up` series says.
  auto query = [&](const std::string& promql) {
    Json j = Json::parse(
        Get(prometheus, "/api/v1/query?query=" + httplib::detail::encode_query_param(promql)),
        nullptr, false);
    return j.is_object() && j["status"] == "success" ? j["data"]["result"] : Json::array();
  };
  ASSERT_TRUE(WaitFor(
      [&] { return query("sum(up)").size() == 1 && query("sum(up)")[0]["value"][1] == "5"; }, 30))
      << query("up").dump() << ReadFile(dir_.path() + "/prometheus.log");

  const std::vector<std::string> series = {
      "tessera_scheduling_cycle_duration_seconds_bucket",
      "tessera_scheduling_decisions_total{kind=\"bind\"}",
      "tessera_job_scheduling_latency_seconds_count{queue=\"research\"}",
      "tessera_preemption_victims_total",
      "tessera_jobs{queue=\"research\",kind=\"TrainingJob\",phase=\"Running\"}",
      "tessera_queue_allocated_gpus{queue=\"research\"}",
      "tessera_queue_dominant_share{queue=\"research\"}",
      "tessera_queue_pending_jobs{queue=\"research\"}",
      "tessera_node_ready{job=\"tessera-agent\"}",
      "tessera_gpu_allocated{simulated=\"true\"}",
      "tessera_gpu_utilization_ratio{simulated=\"true\"}",
      "tessera_gpu_memory_used_bytes{simulated=\"true\"}",
      "tessera_store_commit_duration_seconds_count",
      "tessera_api_requests_total{route=\"/v1/jobs\",code=\"201\"}",
      "tessera_api_request_duration_seconds_count",
      "tessera_node_heartbeat_age_seconds",
      "tessera_agent_heartbeat_duration_seconds_count",
      "tessera_engine_requests_running{simulated=\"true\"}",
      "tessera_gateway_replicas",
  };
  for (const auto& s : series) EXPECT_FALSE(query(s).empty()) << s;
  // The job's 2 GPUs on one simulated node: 2 GPUs allocated, by the controller and by the agent.
  EXPECT_EQ(query("sum(tessera_queue_allocated_gpus{queue=\"research\"})")[0]["value"][1], "2");
  EXPECT_EQ(query("sum(tessera_gpu_allocated)")[0]["value"][1], "2");
  EXPECT_EQ(query("count(tessera_gpu_allocated)")[0]["value"][1], "8");  // 2 nodes x 4 GPUs
}

}  // namespace
}  // namespace tessera::testing
