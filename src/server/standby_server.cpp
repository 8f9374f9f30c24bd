#include "server/standby_server.h"

#include <httplib.h>

#include "server/http_frontend.h"
#include "spec/document.h"
#include "spec/job_spec.h"

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

StandbyServer::StandbyServer(std::function<Result<Json>()> controllers, const TlsContext* tls)
    : controllers_(std::move(controllers)), tls_(tls), http_(std::make_unique<RoutedServer>()) {
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
  // A standby answers small requests at once: a few workers per class are plenty.
  FrontendLimits limits;
  limits.user_threads = 4;
  limits.agent_threads = 8;
  limits.long_poll_threads = 2;
  limits.max_queued = 256;
  limits.idle_timeout_ms = 1000;
  limits.max_body_bytes = kMaxSpecBytes + 4096;  // as the leader: a 503 naming it, not a 413
  front_ = std::make_unique<HttpFrontend>(*http_, limits, tls_);
  return front_->Bind(host, port);
}

void StandbyServer::Serve() { front_->Serve(); }
void StandbyServer::Stop() {
  if (front_) front_->Stop();
}
void StandbyServer::Close() { front_.reset(); }

}  // namespace tessera
