// A live cluster for integration tests: the real tesserad and tessera-agent binaries from
// $TESSERA_BIN_DIR on 127.0.0.1 with free ports and a temporary state directory, an HTTP
// client for the API, and teardown that leaves no process behind (agents, the controller and
// every task process group recorded by the agents), even when the test fails.
//
// By default the controller runs with --insecure (no authentication). With Options::auth it
// runs with a token file (an admin token the harness' client presents, plus `users`) and the
// agents register with a bootstrap token.
#pragma once

#include <httplib.h>

#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/process_harness.h"

namespace tessera::testing {

using Json = nlohmann::json;

struct HttpResult {
  int status = 0;  // 0: no answer
  std::string body;
  Json json;  // null when the body is not JSON
  std::map<std::string, std::string> headers;
};

class LiveCluster {
 public:
  struct Options {
    int agents = 2;
    std::string gpus = "4xH100";
    double heartbeat_timeout_s = 2;
    double heartbeat_interval_s = 0.25;
    std::vector<std::string> controller_args;  // more tesserad flags, e.g. --priority-preemption
    int simulate_nodes = 0;  // nodes each agent emulates (--simulate-nodes); 0 = one
    bool simulate_tasks = false;  // agents run simulated tasks, no processes (--simulate-tasks)
    bool auth = false;       // authentication on (tokens in dir()/auth)
    // More lines of the token file with auth: "token,user,uid,\"group1,group2\"".
    std::vector<std::string> users;
  };
  // The admin's token and the bootstrap token with Options::auth.
  static constexpr const char* kAdminToken = "admin-token-0123456789abcdef";
  static constexpr const char* kBootstrapToken = "bootstrap-token-0123456789abcdef";

  explicit LiveCluster(Options options) : options_(std::move(options)), dir_("tessera-live") {
    StartController();
    for (int i = 0; i < options_.agents; ++i) StartAgent(i);
  }
  LiveCluster() : LiveCluster(Options{}) {}
  ~LiveCluster() { Teardown(); }

  const std::string& dir() const { return dir_.path(); }
  const std::string& url() const { return url_; }
  std::string AgentState(int i) const { return dir() + "/agent-" + std::to_string(i); }
  std::string NodeName(int i) const { return "node-" + std::to_string(i); }
  pid_t controller_pid() const { return controller_; }
  pid_t agent_pid(int i) const { return agents_.at(static_cast<std::size_t>(i)); }

  // Starts tesserad; on a restart it takes the same port so agents find it again.
  void StartController() {
    const std::string endpoint = dir() + "/endpoint";
    std::filesystem::remove(endpoint);
    std::vector<std::string> argv = {BinDir() + "/tesserad",
                                     "--state",
                                     dir(),
                                     "--port",
                                     std::to_string(port_),
                                     "--endpoint-file",
                                     endpoint,
                                     "--heartbeat-timeout",
                                     std::to_string(options_.heartbeat_timeout_s),
                                     "--heartbeat-interval",
                                     std::to_string(options_.heartbeat_interval_s)};
    argv.insert(argv.end(), options_.controller_args.begin(), options_.controller_args.end());
    if (options_.auth) {
      WriteAuthFiles();
      argv.insert(argv.end(), {"--token-auth-file", dir() + "/auth/tokens.csv",
                               "--bootstrap-token-file", dir() + "/auth/bootstrap.token"});
    } else {
      argv.push_back("--insecure");
    }
    controller_ = Spawn(argv, dir() + "/tesserad.log");
    WaitFor([&] { return std::filesystem::exists(endpoint); }, 20);
    std::ifstream in(endpoint);
    std::getline(in, url_);
    if (port_ == 0 && !url_.empty()) port_ = std::stoi(url_.substr(url_.rfind(':') + 1));
    client_ = std::make_unique<httplib::Client>(url_);
    if (options_.auth) client_->set_bearer_token_auth(kAdminToken);
    client_->set_connection_timeout(2, 0);
    client_->set_tcp_nodelay(true);
    client_->set_read_timeout(30, 0);
  }
  void KillController(int sig = SIGKILL) {
    Stop(controller_, sig, 15000);
    controller_ = 0;
  }

  void StartAgent(int i) {
    if (static_cast<std::size_t>(i) >= agents_.size())
      agents_.resize(static_cast<std::size_t>(i) + 1);
    std::vector<std::string> argv = {BinDir() + "/tessera-agent",
                                     "--server",
                                     url_,
                                     "--node",
                                     NodeName(i),
                                     "--state",
                                     AgentState(i),
                                     "--simulate-gpus",
                                     options_.gpus};
    if (options_.simulate_nodes > 0) {
      argv.insert(argv.end(), {"--simulate-nodes", std::to_string(options_.simulate_nodes)});
    }
    if (options_.simulate_tasks) argv.push_back("--simulate-tasks");
    if (options_.auth) {
      argv.insert(argv.end(), {"--bootstrap-token-file", dir() + "/auth/bootstrap.token"});
    }
    agents_[static_cast<std::size_t>(i)] =
        Spawn(argv, dir() + "/agent-" + std::to_string(i) + ".log");
  }
  void KillAgent(int i, int sig = SIGKILL) {
    RecordTaskGroups();
    Stop(agents_[static_cast<std::size_t>(i)], sig, 20000);
    agents_[static_cast<std::size_t>(i)] = 0;
  }

  // Waits until `n` nodes are Ready and heard from recently.
  bool WaitForReadyNodes(int n, double seconds = 20) {
    return WaitFor(
        [&] {
          auto r = Get("/v1/nodes");
          if (r.status != 200) return false;
          int ready = 0;
          for (const auto& node : r.json["nodes"]) {
            ready += node["status"] == "Ready" && node["lastHeartbeatAgoMs"].get<long>() < 2000;
          }
          return ready == n;
        },
        seconds);
  }

  HttpResult Get(const std::string& path) { return Convert(client_->Get(path.c_str())); }
  HttpResult Post(const std::string& path, const std::string& body) {
    return Convert(client_->Post(path.c_str(), body, "application/yaml"));
  }
  HttpResult Delete(const std::string& path) { return Convert(client_->Delete(path.c_str())); }

  // One request with `token` as the bearer token (none when empty), on a fresh connection.
  HttpResult Call(const std::string& method, const std::string& path, const std::string& token,
                  const std::string& body = "",
                  const std::map<std::string, std::string>& headers = {}) {
    httplib::Client c(url_);
    c.set_connection_timeout(2, 0);
    c.set_read_timeout(10, 0);
    if (!token.empty()) c.set_bearer_token_auth(token);
    httplib::Headers h(headers.begin(), headers.end());
    if (method == "GET") return Convert(c.Get(path.c_str(), h));
    if (method == "DELETE") return Convert(c.Delete(path.c_str(), h));
    return Convert(c.Post(path.c_str(), h, body, "application/json"));
  }

  // Submits and expects 201; returns the reply.
  HttpResult Submit(const std::string& spec) { return Post("/v1/jobs", spec); }
  Json Job(const std::string& queue, const std::string& name) {
    return Get("/v1/jobs/" + queue + "/" + name).json;
  }
  // By value, so that a range-for over it does not dangle.
  Json TaskList(const std::string& queue, const std::string& name) {
    return Job(queue, name)["taskList"];
  }
  Json Nodes() { return Get("/v1/nodes").json["nodes"]; }
  bool WaitForPhase(const std::string& queue, const std::string& name, const std::string& phase,
                    double seconds = 20) {
    return WaitFor([&] { return Job(queue, name).value("phase", "") == phase; }, seconds);
  }

  // Remembers the process groups of every task the agents have recorded, so that teardown
  // can end them even after their agent was killed.
  void RecordTaskGroups() {
    for (std::size_t i = 0; i < agents_.size(); ++i) {
      std::error_code ec;
      for (const auto& e :
           std::filesystem::directory_iterator(AgentState(static_cast<int>(i)) + "/tasks", ec)) {
        auto doc = Json::parse(ReadFile(e.path().string()), nullptr, false);
        if (doc.is_object() && doc.value("pgid", 0) > 0)
          ProcessRegistry::Get().AddGroup(doc["pgid"].get<pid_t>());
      }
    }
  }

  void Teardown() {
    if (torn_down_) return;
    torn_down_ = true;
    RecordTaskGroups();
    Stop(controller_, SIGKILL, 5000);
    for (pid_t a : agents_) Stop(a, SIGTERM, 15000);
    ProcessRegistry::Get().KillAll();
  }

  std::string Logs() const {
    std::string all = "--- tesserad.log\n" + ReadFile(dir() + "/tesserad.log");
    for (std::size_t i = 0; i < agents_.size(); ++i) {
      all += "--- agent-" + std::to_string(i) + ".log\n" +
             ReadFile(dir() + "/agent-" + std::to_string(i) + ".log");
    }
    return all;
  }

 private:
  void WriteAuthFiles() const {
    std::filesystem::create_directories(dir() + "/auth");
    std::ofstream tokens(dir() + "/auth/tokens.csv");
    tokens << kAdminToken << ",admin,admin,\"tessera:admins\"\n";
    for (const auto& line : options_.users) tokens << line << "\n";
    std::ofstream(dir() + "/auth/bootstrap.token") << kBootstrapToken << "\n";
  }

  static HttpResult Convert(const httplib::Result& r) {
    HttpResult out;
    if (!r) return out;
    out.status = r->status;
    out.body = r->body;
    out.json = Json::parse(r->body, nullptr, false);
    if (out.json.is_discarded()) out.json = nullptr;
    for (const auto& [k, v] : r->headers) out.headers[k] = v;
    return out;
  }

  Options options_;
  TempDir dir_;
  int port_ = 0;
  std::string url_;
  pid_t controller_ = 0;
  std::vector<pid_t> agents_;
  std::unique_ptr<httplib::Client> client_;
  bool torn_down_ = false;
};

// A TrainingJob spec with `shell: true` running `script`.
inline std::string TrainingSpec(const std::string& name, int workers, int gpus,
                                const std::string& script, const std::string& extra = "",
                                int max_restarts = 0) {
  return "apiVersion: tessera/v1\nkind: TrainingJob\nmetadata: {name: " + name +
         "}\nspec:\n  workers: " + std::to_string(workers) +
         "\n  gpusPerWorker: " + std::to_string(gpus) +
         "\n  shell: true\n  gracePeriodSeconds: 2\n  maxRestarts: " +
         std::to_string(max_restarts) + "\n" + extra + "  command: [" + Json(script).dump() + "]\n";
}

}  // namespace tessera::testing
