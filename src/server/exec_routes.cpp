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
// long-poll worker, never a user's or an agent's. So sessions are counted (exec_session_table.h):
// an open beyond --max-exec-sessions-per-user or --max-exec-sessions is refused with 429 and the
// reason. Requests reach the agent over kept-alive connections (agent_connections.h), not a
// new TLS handshake per read.
#include <httplib.h>

#include "server/agent_connections.h"
#include "server/exec_session_table.h"
#include "server/http_api.h"
#include "server/http_helpers.h"
#include "spec/document.h"

namespace tessera {

namespace {

using Json = nlohmann::json;

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

// Where a session this controller opened lives; else (opened before a failover, or dropped here
// as idle) found through its job, as at its start.
std::optional<ExecTarget> KnownOrFound(const std::optional<ExecSessionEntry>& known, Controller& c,
                                       const httplib::Request& req, httplib::Response& res) {
  if (known) return ExecTarget{known->agent_url, known->task_id};
  return FindTarget(c, req, res);
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

void SendTooMany(httplib::Response& res, const std::string& reason) {
  res.set_header("Retry-After", "1");
  SendJson(res, 429,
           {{"error",
             {{"code", "ResourceExhausted"}, {"message", reason}, {"details", Json::array()}}}});
}

// The agent's session id in its 201 answer, or empty.
std::string SessionOf(const httplib::Result& r) {
  if (!r || r->status != 201) return "";
  auto doc = ParseJson(r->body);
  if (!doc || !doc->is_object() || !(*doc)["session"].is_string()) return "";
  const std::string id = (*doc)["session"].get<std::string>();
  return ValidSession(id) ? id : "";
}

// The agent's query for one read or write of a session, from ours (checked), or nullopt with
// the error sent.
std::optional<std::string> IoQuery(const httplib::Request& req, httplib::Response& res,
                                   std::int64_t* wait_ms) {
  std::string query;
  for (const char* key : {"out", "err", "rows", "cols", "closeStdin"}) {
    if (!req.has_param(key)) continue;
    auto v = key == std::string("closeStdin") ? std::optional<std::int64_t>(TruthyParam(req, key))
                                              : IntParam(req, res, key, 0, 0, INT64_MAX);
    if (!v) return std::nullopt;
    query += std::string(query.empty() ? "?" : "&") + key + "=" +
             (key == std::string("closeStdin") ? (*v != 0 ? "true" : "false") : std::to_string(*v));
  }
  auto wait = IntParam(req, res, "waitMs", 0, 0, kMaxWaitMs);
  if (!wait) return std::nullopt;
  *wait_ms = *wait;
  return query + (query.empty() ? "?" : "&") + "waitMs=" + std::to_string(*wait);
}

bool Exited(const httplib::Result& r) {
  return r && (r->status == 404 || r->get_header_value("X-Tessera-Exited") == "true");
}

}  // namespace

void ApiServer::SetExecLimits(const ExecSessionLimits& limits) {
  exec_sessions_->SetLimits(limits);
}

void ApiServer::ExecRoutes() {
  Controller& c = controller_;
  auto sessions = exec_sessions_;
  auto agents = std::make_shared<AgentConnections>(agent_tls_.get());
  // Who asked, for the agent to bind the session to (the caller was authorised already).
  auto user_of = [this](const httplib::Request& req) {
    return guard_ ? guard_->Identify(req).name : std::string("anonymous");
  };
  auto open = [&c, sessions, agents](const httplib::Request& req, httplib::Response& res,
                                     const std::string& user) {
    if (auto full = sessions->Reserve(user, std::chrono::steady_clock::now()))
      return SendTooMany(res, *full);
    auto target = FindTarget(c, req, res);
    if (!target) return sessions->Unreserve(user);
    BorrowedAgentClient agent(*agents, target->agent_url, 10);
    const std::string path = "/v1/tasks/" + std::to_string(target->task_id) + "/exec";
    auto r = agent->Post(path.c_str(), {{"X-Tessera-User", user}}, req.body, "application/json");
    if (const std::string id = SessionOf(r); !id.empty()) {
      sessions->Add(id, {user, req.matches[1], target->agent_url, target->task_id,
                         std::chrono::steady_clock::now()});
    } else {
      sessions->Unreserve(user);
    }
    Relay(r, target->agent_url, res);
  };
  PostDocument(
      *http_, R"(/v1/exec/(.+))",
      [&c, sessions, agents, user_of, open](const httplib::Request& req, httplib::Response& res) {
        const std::string user = user_of(req);
        if (!req.has_param("session")) return open(req, res, user);
        const std::string session = req.get_param_value("session");
        if (!ValidSession(session))
          return SendError(res, Error::Code::kInvalidArgument, "session: expected 32 hex digits");
        std::int64_t wait_ms = 0;
        auto query = IoQuery(req, res, &wait_ms);
        if (!query) return;
        auto known = sessions->Use(session, user, req.matches[1], std::chrono::steady_clock::now());
        auto target = KnownOrFound(known, c, req, res);
        if (!target) return;
        BorrowedAgentClient agent(*agents, target->agent_url,
                                  static_cast<int>(wait_ms / 1000 + 10));
        const std::string path = "/v1/exec/" + session + *query;
        const httplib::Headers who = {{"X-Tessera-User", user}};
        auto r = agent->Post(path.c_str(), who, req.body, "application/octet-stream");
        // A kept-alive connection the agent had closed: a read (no input) is safe to
        // send again (it names the offsets it has), input is not.
        if (!r && req.body.empty())
          r = agent->Post(path.c_str(), who, req.body, "application/octet-stream");
        if (Exited(r)) sessions->Remove(session);
        Relay(r, target->agent_url, res);
      });
  http_->Delete(R"(/v1/exec/(.+))", [&c, sessions, agents, user_of](const httplib::Request& req,
                                                                    httplib::Response& res) {
    const std::string session = req.get_param_value("session");
    if (!ValidSession(session))
      return SendError(res, Error::Code::kInvalidArgument, "session: expected 32 hex digits");
    const std::string user = user_of(req);
    // Its place is freed even when its task has ended meanwhile (the agent ended it then).
    auto known = sessions->Use(session, user, req.matches[1], std::chrono::steady_clock::now());
    if (known) sessions->Remove(session);
    auto target = KnownOrFound(known, c, req, res);
    if (!target) return;
    BorrowedAgentClient agent(*agents, target->agent_url, 10);
    Relay(agent->Delete(("/v1/exec/" + session).c_str(), {{"X-Tessera-User", user}}),
          target->agent_url, res);
  });
}

}  // namespace tessera
