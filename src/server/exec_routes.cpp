// `tessera exec` through the controller: the caller is authorised like a reader of the job's
// logs (a team member of its queue, or an admin: Action::kExec), then the session is proxied to
// the agent of the task, which answers the controller's client certificate only
// (agent/agent_endpoint.cpp has the agent's side).
//
//   POST   /v1/exec/{queue...}/{name}?rank=N           body {command, tty, stdin, rows, cols,
//                                                      term} -> 201 {session}; 409 when the rank
//                                                      is not running
//   POST   /v1/exec/{queue...}/{name}?rank=N&session=S&out=&err=&waitMs=&closeStdin=&rows=&cols=
//                                                      body: stdin bytes; with out and err: the
//                                                      output beyond those offsets (stdout, then
//                                                      stderr; X-Tessera-Stdout-Bytes splits them)
//   DELETE /v1/exec/{queue...}/{name}?rank=N&session=S ends the command
//
// These routes are of the long-poll class (request_head.h): a read that waits for output holds a
// long-poll worker, never a user's or an agent's.
#include <httplib.h>

#include "server/http_api.h"
#include "server/http_helpers.h"

namespace tessera {

namespace {

constexpr std::int64_t kMaxWaitMs = 5000;

struct ExecTarget {
  std::string agent_url;
  std::int64_t task_id = 0;
};

// The running task of the job in the path at ?rank=, or nullopt with the error sent.
std::optional<ExecTarget> FindTarget(Controller& c, const httplib::Request& req,
                                     httplib::Response& res) {
  std::string queue, name;
  if (!SplitQueueName(req.matches[1], &queue, &name)) {
    SendError(res, Error::Code::kInvalidArgument, "expected /v1/exec/{queue}/{name}");
    return std::nullopt;
  }
  auto rank = IntParam(req, res, "rank", 0, 0, kMaxTasksPerJob);
  if (!rank) return std::nullopt;
  auto loc = c.FindLog(queue, name, static_cast<int>(*rank), 0);
  if (!loc) {
    SendError(res, loc.error());
    return std::nullopt;
  }
  if (loc->state != "Running") {
    SendError(res, Error::Code::kFailedPrecondition,
              "rank " + std::to_string(*rank) + " of job " + queue + "/" + name +
                  " is not running (task " + std::to_string(loc->task_id) + " is " + loc->state +
                  ")");
    return std::nullopt;
  }
  if (loc->agent_url.empty()) {
    SendError(res, Error::Code::kFailedPrecondition, "the task's node has no agent endpoint");
    return std::nullopt;
  }
  return ExecTarget{loc->agent_url, loc->task_id};
}

// The agent's answer, status, body and X-Tessera-* headers, as ours.
void Relay(const httplib::Result& r, const std::string& agent_url, httplib::Response& res) {
  if (!r) {
    return SendError(
        res, Error::Code::kIo,
        "the agent at " + agent_url + " did not answer (" + httplib::to_string(r.error()) + ")");
  }
  res.status = r->status;
  for (const auto& [key, value] : r->headers) {
    if (key.starts_with("X-Tessera-")) res.set_header(key, value);
  }
  const std::string type = r->get_header_value("Content-Type");
  res.set_content(r->body, type.empty() ? "application/octet-stream" : type.c_str());
}

bool ValidSession(const std::string& s) {
  return s.size() == 32 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

void ApiServer::ExecRoutes() {
  Controller& c = controller_;
  const AgentClientTls* tls = agent_tls_.get();
  // Who asked, for the agent to bind the session to (the caller was authorised already).
  auto user_of = [this](const httplib::Request& req) {
    return guard_ ? guard_->Identify(req).name : std::string("anonymous");
  };
  PostDocument(
      *http_, R"(/v1/exec/(.+))",
      [&c, tls, user_of](const httplib::Request& req, httplib::Response& res) {
        auto target = FindTarget(c, req, res);
        if (!target) return;
        const httplib::Headers who = {{"X-Tessera-User", user_of(req)}};
        if (!req.has_param("session")) {
          httplib::Client agent = AgentClient(target->agent_url, *tls);
          const std::string path = "/v1/tasks/" + std::to_string(target->task_id) + "/exec";
          return Relay(agent.Post(path.c_str(), who, req.body, "application/json"),
                       target->agent_url, res);
        }
        const std::string session = req.get_param_value("session");
        if (!ValidSession(session))
          return SendError(res, Error::Code::kInvalidArgument, "session: expected 32 hex digits");
        std::string query;
        for (const char* key : {"out", "err", "rows", "cols", "closeStdin"}) {
          if (!req.has_param(key)) continue;
          auto v = key == std::string("closeStdin")
                       ? std::optional<std::int64_t>(TruthyParam(req, key))
                       : IntParam(req, res, key, 0, 0, INT64_MAX);
          if (!v) return;
          query += std::string(query.empty() ? "?" : "&") + key + "=" +
                   (key == std::string("closeStdin") ? (*v != 0 ? "true" : "false")
                                                     : std::to_string(*v));
        }
        auto wait = IntParam(req, res, "waitMs", 0, 0, kMaxWaitMs);
        if (!wait) return;
        query += std::string(query.empty() ? "?" : "&") + "waitMs=" + std::to_string(*wait);
        httplib::Client agent =
            AgentClient(target->agent_url, *tls, static_cast<int>(*wait / 1000 + 10));
        Relay(agent.Post(("/v1/exec/" + session + query).c_str(), who, req.body,
                         "application/octet-stream"),
              target->agent_url, res);
      });
  http_->Delete(
      R"(/v1/exec/(.+))", [&c, tls, user_of](const httplib::Request& req, httplib::Response& res) {
        auto target = FindTarget(c, req, res);
        if (!target) return;
        const std::string session = req.get_param_value("session");
        if (!ValidSession(session))
          return SendError(res, Error::Code::kInvalidArgument, "session: expected 32 hex digits");
        httplib::Client agent = AgentClient(target->agent_url, *tls);
        Relay(agent.Delete(("/v1/exec/" + session).c_str(), {{"X-Tessera-User", user_of(req)}}),
              target->agent_url, res);
      });
}

}  // namespace tessera
