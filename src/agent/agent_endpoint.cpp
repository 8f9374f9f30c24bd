// The agent's own endpoint (endpoint_tls.h says who may call what): health and metrics; for the
// controller only, task logs, `tessera exec` sessions (exec_session.h) and the failure drill of
// emulated nodes.
//
//   GET    /v1/healthz, /metrics                 open
//   GET    /v1/tasks/{id}/log?offset=&limit=     the task's stdout and stderr
//   POST   /v1/tasks/{id}/exec                   {command, tty, stdin, rows, cols, term} -> 201
//                                                {session}; X-Tessera-User: who asked
//   POST   /v1/exec/{session}?out=&err=&waitMs=&closeStdin=&rows=&cols=   body: stdin bytes;
//                                                with out and err (the offsets read so far): the
//                                                output beyond them, stdout then stderr, sizes and
//                                                the exit in X-Tessera-* headers
//   DELETE /v1/exec/{session}                    ends the command
//   POST   /v1/emulated/{node}/fail              the failure drill
#include <fcntl.h>
#include <httplib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>

#include "agent/agent.h"
#include "spec/document.h"

extern char** environ;

namespace tessera {

namespace {

using Json = nlohmann::json;

void Log(const std::string& node, const std::string& msg) {
  std::fprintf(stderr, "tessera-agent[%s]: %s\n", node.c_str(), msg.c_str());
}

void SendError(httplib::Response& res, int status, const char* code, const std::string& message) {
  res.status = status;
  res.set_content(DumpJson(Json{{"error", {{"code", code}, {"message", message}}}}) + "\n",
                  "application/json");
}

// A non-negative integer query parameter (absent: `fallback`); false when malformed.
bool Param(const httplib::Request& req, const char* name, std::int64_t& out) {
  if (!req.has_param(name)) return true;
  const std::string v = req.get_param_value(name);
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return ec == std::errc() && p == v.data() + v.size() && out >= 0;
}

std::int64_t TaskIdOf(const httplib::Request& req) {
  std::int64_t id = 0;
  const std::string text = req.matches[1];
  std::from_chars(text.data(), text.data() + text.size(), id);
  return id;
}

void ServeLog(const std::string& state, const httplib::Request& req, httplib::Response& res) {
  std::int64_t offset = 0, limit = 1 << 20;
  if (!Param(req, "offset", offset) || !Param(req, "limit", limit) || limit > (16 << 20)) {
    return SendError(res, 400, "InvalidArgument",
                     "offset and limit must be non-negative integers (limit at most 16 MiB)");
  }
  const std::int64_t id = TaskIdOf(req);
  // The path is built from the number alone and opened without following links, so a request
  // can never read outside <state>/logs.
  const std::string path = TaskLogPath(state, id);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    return SendError(res, 404, "NotFound",
                     "no log for task " + std::to_string(id) + " on this node");
  }
  struct stat st {};
  ::fstat(fd, &st);
  std::string body;
  if (offset < st.st_size) {
    const auto n = static_cast<std::size_t>(std::min<std::int64_t>(limit, st.st_size - offset));
    body.resize(n);
    const ssize_t got = ::pread(fd, body.data(), n, offset);
    body.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  }
  ::close(fd);
  res.set_header("X-Tessera-Offset",
                 std::to_string(offset + static_cast<std::int64_t>(body.size())));
  res.set_header("X-Tessera-Size", std::to_string(st.st_size));
  res.set_content(body, "text/plain; charset=utf-8");
}

}  // namespace

void Agent::StartLogServer() {
  auto server = MakeEndpointServer(options_.endpoint_tls);
  if (!server) {
    Log(options_.node, server.error().message);
    return;
  }
  log_server_ = std::move(*server);
  // Exec sessions' reads wait for output: threads enough for them (a read and a write each, at
  // most ExecSessions::kMaxSessions) beside logs and scrapes. A kept-alive connection holds its
  // thread while idle, so the controller keeps few (server/agent_connections.h) and they close
  // after a while; within that, a session's reads reuse theirs instead of a TLS handshake each.
  log_server_->new_task_queue = [] {
    return new httplib::ThreadPool(2 * ExecSessions::kMaxSessions + 16);
  };
  log_server_->set_keep_alive_max_count(100'000);
  // No Nagle delay between an answer's headers and its body: on a kept-alive connection it
  // would wait for the controller's delayed ACK (40 ms) on every exec read.
  log_server_->set_tcp_nodelay(true);
  log_server_->set_keep_alive_timeout(10);
  const bool tls = options_.endpoint_tls.enabled();
  const std::string controller = options_.endpoint_tls.controller_cn;
  // With TLS, the routes into tasks answer the controller's client certificate only.
  auto controller_only = [tls, controller](const httplib::Request& req, httplib::Response& res) {
    std::string why;
    if (!tls || CallerIsController(req, controller, &why)) return true;
    SendError(res, 403, "PermissionDenied", why);
    return false;
  };
  log_server_->Get("/v1/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{\"ok\":true}\n", "application/json");
  });
  log_server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(MetricsText(), MetricsWriter::kContentType);
  });
  // A failure drill on an emulated node (tessera bench recovery): it dies as a machine does.
  log_server_->Post(R"(/v1/emulated/([a-z0-9-]+)/fail)", [this, controller_only](
                                                             const httplib::Request& req,
                                                             httplib::Response& res) {
    if (!controller_only(req, res)) return;
    const std::string node = req.matches[1];
    const int killed = FailEmulatedNode(node);
    if (killed < 0)
      return SendError(res, 404, "NotFound", "no emulated node of this agent has that name");
    res.set_content("{\"node\":\"" + node + "\",\"killedTasks\":" + std::to_string(killed) + "}\n",
                    "application/json");
  });
  const std::string state = options_.state_dir;
  log_server_->Get(R"(/v1/tasks/([0-9]{1,18})/log)",
                   [state, controller_only](const httplib::Request& req, httplib::Response& res) {
                     if (controller_only(req, res)) ServeLog(state, req, res);
                   });
  log_server_->Post(R"(/v1/tasks/([0-9]{1,18})/exec)",
                    [this, controller_only](const httplib::Request& req, httplib::Response& res) {
                      if (controller_only(req, res)) StartExec(req, res);
                    });
  log_server_->Post(R"(/v1/exec/([0-9a-f]{32}))",
                    [this, controller_only](const httplib::Request& req, httplib::Response& res) {
                      if (controller_only(req, res)) ExecIo(req, res);
                    });
  log_server_->Delete(R"(/v1/exec/([0-9a-f]{32}))",
                      [this, controller_only](const httplib::Request& req, httplib::Response& res) {
                        if (!controller_only(req, res)) return;
                        const std::string user = req.get_header_value("X-Tessera-User");
                        if (auto s = exec_.Find(req.matches[1], user)) s->Kill();
                        exec_.Remove(req.matches[1]);
                        res.status = 204;
                      });
  const int port = options_.listen_port == 0
                       ? log_server_->bind_to_any_port(options_.listen_host)
                       : (log_server_->bind_to_port(options_.listen_host, options_.listen_port)
                              ? options_.listen_port
                              : -1);
  if (port <= 0) {
    Log(options_.node, "cannot bind the log endpoint on " + options_.listen_host);
    return;
  }
  agent_url_ = (tls ? "https://" : "http://") + options_.listen_host + ":" + std::to_string(port);
  log_thread_ = std::thread([this] { log_server_->listen_after_bind(); });
}

Result<ExecCommand> Agent::ExecCommandFor(std::int64_t task_id, const Json& body) {
  ExecCommand cmd;
  try {
    cmd.argv = body.at("command").get<std::vector<std::string>>();
    cmd.tty = body.value("tty", false);
    cmd.stdin_open = body.value("stdin", false);
    cmd.rows = body.value("rows", 0);
    cmd.cols = body.value("cols", 0);
  } catch (const std::exception&) {
    return InvalidArgument(
        "command: expected {\"command\": [strings], \"tty\": bool, \"stdin\": bool, \"rows\": "
        "int, \"cols\": int}");
  }
  if (cmd.argv.empty() || cmd.argv[0].empty()) return InvalidArgument("command: empty");
  std::lock_guard lock(mu_);
  auto it = tasks_.find(task_id);
  if (it == tasks_.end())
    return NotFound("task " + std::to_string(task_id) + " is not on this node");
  const LocalTask& t = it->second;
  if (t.state != ReportedState::kRunning || t.alive.empty() || t.stopping)
    return FailedPrecondition("task " + std::to_string(task_id) + " is not running");
  LaunchSettings settings = settings_;
  settings.node = t.node;
  std::vector<std::string> inherited;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) inherited.emplace_back(*e);
  cmd.env = TaskEnvironment(t.launch, 0, settings, inherited);
  if (cmd.tty) cmd.env.push_back("TERM=" + body.value("term", std::string("xterm")));
  cmd.work_dir = t.launch.working_dir.empty()
                     ? options_.state_dir + "/work/task-" + std::to_string(task_id)
                     : t.launch.working_dir;
  cmd.cgroup = t.proc.cgroup;
  cmd.run_as = settings_.run_as;
  return cmd;
}

void Agent::StartExec(const httplib::Request& req, httplib::Response& res) {
  const std::int64_t id = TaskIdOf(req);
  auto body = ParseJson(req.body);
  if (!body || !body->is_object())
    return SendError(res, 400, "InvalidArgument", "body: expected a JSON object");
  auto cmd = ExecCommandFor(id, *body);
  if (!cmd) {
    const auto code = cmd.error().code;
    return SendError(res,
                     code == Error::Code::kNotFound             ? 404
                     : code == Error::Code::kFailedPrecondition ? 409
                                                                : 400,
                     code == Error::Code::kNotFound             ? "NotFound"
                     : code == Error::Code::kFailedPrecondition ? "FailedPrecondition"
                                                                : "InvalidArgument",
                     cmd.error().message);
  }
  if (exec_.size() >= ExecSessions::kMaxSessions) {
    return SendError(res, 429, "ResourceExhausted",
                     "this agent has " + std::to_string(exec_.size()) +
                         " exec sessions open, the most it runs at once; end one first");
  }
  auto session = exec_.Start(*cmd, id, req.get_header_value("X-Tessera-User"));
  if (!session) return SendError(res, 409, "FailedPrecondition", session.error().message);
  res.status = 201;
  res.set_content(DumpJson(Json{{"session", *session}}) + "\n", "application/json");
}

void Agent::ExecIo(const httplib::Request& req, httplib::Response& res) {
  const std::string id = req.matches[1];
  auto session = exec_.Find(id, req.get_header_value("X-Tessera-User"));
  if (!session) return SendError(res, 404, "NotFound", "no exec session " + id + " of this caller");
  std::int64_t out = -1, err = -1, wait_ms = 0, rows = 0, cols = 0;
  if (!Param(req, "out", out) || !Param(req, "err", err) || !Param(req, "waitMs", wait_ms) ||
      !Param(req, "rows", rows) || !Param(req, "cols", cols) || rows > 10000 || cols > 10000) {
    return SendError(res, 400, "InvalidArgument",
                     "out, err, waitMs, rows and cols must be non-negative integers");
  }
  if (!req.body.empty()) {
    if (auto s = session->Write(req.body); !s)
      return SendError(res, 409, "FailedPrecondition", s.error().message);
  }
  if (req.get_param_value("closeStdin") == "true") session->CloseStdin();
  if (rows > 0 && cols > 0) session->Resize(static_cast<int>(rows), static_cast<int>(cols));
  if (!req.has_param("out")) {
    res.status = 204;
    return;
  }
  const auto got = session->Read(out, std::max<std::int64_t>(err, 0),
                                 std::chrono::milliseconds(std::min<std::int64_t>(wait_ms, 10000)));
  if (got.done) exec_.Remove(id);
  res.set_header("X-Tessera-Stdout-Bytes", std::to_string(got.out.size()));
  res.set_header("X-Tessera-Stdout-Offset", std::to_string(got.out_end));
  res.set_header("X-Tessera-Stderr-Offset", std::to_string(got.err_end));
  res.set_header("X-Tessera-Exited", got.done ? "true" : "false");
  if (got.done) {
    res.set_header("X-Tessera-Exit-Code", std::to_string(got.exit_code));
    res.set_header("X-Tessera-Signal", std::to_string(got.signal));
  }
  res.set_content(got.out + got.err, "application/octet-stream");
}

}  // namespace tessera
