#include "server/standby_server.h"

#include <httplib.h>

#include "spec/document.h"

namespace tessera {

namespace {

using Json = nlohmann::json;

void Send(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(DumpJson(body) + "\n", "application/json");
}

}  // namespace

Json StandbyError(const std::string& leader, const std::string& problem) {
  std::string message = "this controller is a standby; ";
  message += leader.empty() ? "no controller leads at the moment (an election is under way)"
                            : "the leader is " + leader;
  if (!problem.empty()) message += " (etcd: " + problem + ")";
  Json error = {{"code", "Unavailable"}, {"message", message}, {"details", Json::array()}};
  error["leader"] = leader.empty() ? Json(nullptr) : Json(leader);
  return {{"error", error}};
}

StandbyServer::StandbyServer(std::function<Result<Json>()> controllers)
    : controllers_(std::move(controllers)), http_(std::make_unique<httplib::Server>()) {
  http_->new_task_queue = [] { return new httplib::ThreadPool(8); };
  http_->set_read_timeout(5, 0);
  http_->set_keep_alive_timeout(1);
  auto leader_and_problem = [this] {
    std::lock_guard lock(mu_);
    return std::pair(leader_, problem_);
  };
  http_->Get("/v1/healthz", [leader_and_problem](const httplib::Request&, httplib::Response& res) {
    const auto [leader, problem] = leader_and_problem();
    Json health = {{"ok", false}, {"role", "standby"}};
    health["leader"] = leader.empty() ? Json(nullptr) : Json(leader);
    if (!problem.empty()) health["storeError"] = "etcd: " + problem;
    Send(res, 503, health);
  });
  http_->Get("/v1/controllers", [this](const httplib::Request&, httplib::Response& res) {
    auto list = controllers_();
    if (!list) {
      Send(res, 503,
           {{"error",
             {{"code", "Unavailable"},
              {"message", list.error().message},
              {"details", Json::array()}}}});
      return;
    }
    Send(res, 200, {{"controllers", *list}});
  });
  auto refuse = [leader_and_problem](const httplib::Request&, httplib::Response& res) {
    const auto [leader, problem] = leader_and_problem();
    if (!leader.empty()) res.set_header("X-Tessera-Leader", leader);
    Send(res, 503, StandbyError(leader, problem));
  };
  for (const char* pattern : {R"(/.*)"}) {
    http_->Get(pattern, refuse);
    http_->Post(pattern, refuse);
    http_->Delete(pattern, refuse);
    http_->Put(pattern, refuse);
  }
}

StandbyServer::~StandbyServer() = default;

void StandbyServer::SetLeader(const std::string& url, const std::string& problem) {
  std::lock_guard lock(mu_);
  leader_ = url;
  problem_ = problem;
}

Result<int> StandbyServer::Bind(const std::string& host, int port) {
  if (port == 0) {
    const int bound = http_->bind_to_any_port(host);
    if (bound <= 0) return IoError("cannot bind " + host + " on any port");
    return bound;
  }
  if (!http_->bind_to_port(host, port))
    return IoError("cannot bind " + host + ":" + std::to_string(port) + " (in use?)");
  return port;
}

void StandbyServer::Serve() { http_->listen_after_bind(); }
void StandbyServer::Stop() { http_->stop(); }

}  // namespace tessera
