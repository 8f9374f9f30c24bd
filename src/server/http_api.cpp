#include "server/http_api.h"

#include <httplib.h>

#include <algorithm>
#include <charconv>
#include <optional>

#include "server/http_helpers.h"
#include "server/metrics_routes.h"
#include "server/ui_routes.h"
#include "spec/document.h"
#include "spec/job_spec.h"
#include "spec/text.h"

namespace tessera {

namespace {

using Json = nlohmann::json;

// The body of POST /v1/release: {"names": [...], "queue": "..."} or {"all": true}.
struct ReleaseRequest {
  std::string queue;
  std::vector<std::string> names;
  bool all = false;
};

Result<ReleaseRequest> ParseReleaseRequest(const std::string& body) {
  auto doc = ParseJson(body);
  if (!doc) return std::unexpected(doc.error());
  if (!doc->is_object()) return InvalidArgument("release: expected a JSON object");
  ReleaseRequest r;
  for (const auto& [key, v] : doc->items()) {
    if (key == "queue" && v.is_string()) {
      r.queue = v.get<std::string>();
      if (!ValidQueuePath(r.queue)) return InvalidArgument("queue: not a valid queue path");
    } else if (key == "all" && v.is_boolean()) {
      r.all = v.get<bool>();
    } else if (key == "names" && v.is_array()) {
      for (const auto& n : v) {
        if (!n.is_string() || !ValidJobName(n.get<std::string>())) {
          return InvalidArgument("names: every entry must be a job name");
        }
        r.names.push_back(n.get<std::string>());
      }
    } else {
      return InvalidArgument("release: unknown key or wrong type: " + key +
                             " (expected names: [string], queue: string, all: bool)");
    }
  }
  return r;
}

}  // namespace

// httplib routes and answers; the connections, deadlines and worker pools are the front end's
// (http_frontend.h), which reads every request before a worker sees it.
ApiServer::ApiServer(Controller& controller, int threads)
    : controller_(controller), http_(std::make_unique<RoutedServer>()) {
  limits_.user_threads = threads;
  limits_.max_body_bytes = kMaxSpecBytes + 4096;
  http_->set_payload_max_length(limits_.max_body_bytes);
  http_->set_keep_alive_timeout(limits_.idle_timeout_ms / 1000);
  http_->set_keep_alive_max_count(limits_.keep_alive_max_requests);
  Routes();
}

ApiServer::~ApiServer() { controller_.SetCommitListener(nullptr); }

Status ApiServer::EnableTls(const std::string& cert_file, const std::string& key_file) {
  auto tls = TlsContext::Load(cert_file, key_file);
  if (!tls) return std::unexpected(tls.error());
  tls_ = std::move(*tls);
  return {};
}

void ApiServer::SetLimits(const FrontendLimits& limits) {
  limits_ = limits;
  limits_.max_body_bytes = kMaxSpecBytes + 4096;
  http_->set_keep_alive_timeout(std::max(1, limits_.idle_timeout_ms / 1000));
}

Result<int> ApiServer::Bind(const std::string& host, int port) {
  front_ = std::make_unique<HttpFrontend>(*http_, limits_, tls_.get());
  auto bound = front_->Bind(host, port);
  if (!bound) return bound;
  // /v1/events?since=N&wait=S waits on no thread: parked until an event beyond N is committed.
  LongPollHooks hooks;
  hooks.park = [this](const RequestHead& head) -> std::optional<LongPollHooks::Wait> {
    if (guard_) {
      // Authenticated before it may wait: a caller without a valid token is answered (401)
      // at once instead of holding a connection for up to 60 s.
      httplib::Request req;
      req.method = head.method;
      req.path = head.path;
      if (!head.authorization.empty()) req.set_header("Authorization", head.authorization);
      if (guard_->Screen(req)) return std::nullopt;
    }
    std::int64_t since = 0, wait_s = 0;
    const auto since_text = QueryValue(head.query, "since").value_or("0");
    const auto wait_text = QueryValue(head.query, "wait").value_or("0");
    auto [p1, e1] =
        std::from_chars(since_text.data(), since_text.data() + since_text.size(), since);
    auto [p2, e2] = std::from_chars(wait_text.data(), wait_text.data() + wait_text.size(), wait_s);
    if (e1 != std::errc() || e2 != std::errc() || wait_s <= 0 || wait_s > 60) return std::nullopt;
    return LongPollHooks::Wait{since, std::chrono::seconds(wait_s)};
  };
  hooks.cursor = [this] { return controller_.LastEventSeq(); };
  front_->SetLongPollHooks(std::move(hooks));
  HttpFrontend* front = front_.get();
  controller_.SetCommitListener([front] { front->Poke(); });
  return bound;
}

void ApiServer::RequireAuth(std::shared_ptr<const RequestGuard> guard) {
  guard_ = std::move(guard);
}

void ApiServer::PreRouting() {
  http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    NoteRequestStart(req);
    if (!guard_) return httplib::Server::HandlerResponse::Unhandled;
    if (auto denial = guard_->Screen(req)) {
      SendDenial(res, *denial);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
}

void ApiServer::Serve() { front_->Serve(); }
void ApiServer::Stop() {
  if (front_) front_->Stop();
}
void ApiServer::Routes() {
  ErrorRoutes();
  JobRoutes();
  ViewRoutes();
  LogRoute();
  ExecRoutes();
  AgentRoutes();
  AddMetricsRoutes(*http_, controller_);
  AddUiRoutes(*http_, controller_, agent_tls_.get());
  PreRouting();
}

void ApiServer::ErrorRoutes() {
  auto& h = *http_;
  h.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unexpected error";
        try {
          if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        SendError(res, Error::Code::kInternal, what);
      });
  h.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404) {
      SendError(res, Error::Code::kNotFound, "no route for " + req.method + " " + req.path);
    } else if (res.status == 413) {
      res.set_content(
          "{\"error\":{\"code\":\"InvalidArgument\",\"message\":\"request body too "
          "large (at most 1 MiB)\",\"details\":[]}}\n",
          "application/json");
    }
  });
}

void ApiServer::JobRoutes() {
  auto& h = *http_;
  Controller& c = controller_;
  const auto guard = [this] { return guard_.get(); };
  PostDocument(h, "/v1/jobs", [&c, guard](const httplib::Request& req, httplib::Response& res) {
    // Parsed once: the queue it names is what the caller must be allowed to submit to.
    auto spec = ParseSubmission(req.body);
    if (!spec) return SendError(res, spec.error());
    if (const RequestGuard* g = guard()) {
      if (auto denial = g->CheckJobAction(req, Action::kSubmit, spec->queue))
        return SendDenial(res, *denial);
    }
    auto job =
        c.Submit(std::move(*spec), TruthyParam(req, "hold"), TruthyParam(req, "queueAnyway"));
    if (!job) return SendError(res, job.error());
    SendJson(res, 201, *job);
  });
  // Held jobs released in one commit: {"names": [...], "queue": "..."} or {"all": true}.
  PostDocument(h, "/v1/release", [&c, guard](const httplib::Request& req, httplib::Response& res) {
    auto r = ParseReleaseRequest(req.body);
    if (!r) return SendError(res, Error::Code::kInvalidArgument, r.error().message);
    if (const RequestGuard* g = guard()) {
      // Without a queue a release may reach any queue: admins only.
      if (auto denial = g->CheckJobAction(req, Action::kRelease, r->queue.empty() ? "*" : r->queue))
        return SendDenial(res, *denial);
    }
    auto out = c.Release(r->queue, r->names, r->all);
    if (!out) return SendError(res, out.error());
    SendJson(res, 200, *out);
  });
  h.Get("/v1/jobs", [&c, guard](const httplib::Request& req, httplib::Response& res) {
    JobFilter f;
    if (req.has_param("queue")) f.queue = req.get_param_value("queue");
    if (req.has_param("name")) f.name = req.get_param_value("name");
    if (req.has_param("phase")) {
      const std::string phase = req.get_param_value("phase");
      f.phase = api::ParseJobPhase(phase);
      if (!f.phase) {
        return SendError(
            res, Error::Code::kInvalidArgument,
            "phase: unknown phase " + Quote(phase) + " (known: " + api::JobPhaseNames() + ")");
      }
    }
    if (req.has_param("labelSelector")) {
      auto sel = LabelSelector::Parse(req.get_param_value("labelSelector"));
      if (!sel) return SendError(res, Error::Code::kInvalidArgument, sel.error().message);
      f.selector = std::move(*sel);
    }
    if (req.has_param("user")) f.user = req.get_param_value("user");
    if (req.has_param("view")) {
      const std::string view = req.get_param_value("view");
      if (view != "summary" && view != "object") {
        return SendError(res, Error::Code::kInvalidArgument,
                         "view: expected summary or object, got " + Quote(view));
      }
      f.objects = view == "object";
    }
    if (req.has_param("order")) {
      const std::string order = req.get_param_value("order");
      if (order != "oldest" && order != "newest") {
        return SendError(res, Error::Code::kInvalidArgument,
                         "order: expected oldest or newest, got " + Quote(order));
      }
      f.newest_first = order == "newest";
    }
    auto limit = IntParam(req, res, "limit", 0, 0, 1'000'000);
    if (!limit) return;
    f.limit = static_cast<std::size_t>(*limit);
    if (req.has_param("continue")) {
      // The `continue` of the previous page (JobPage::next_continue), opaque to clients.
      const std::string token = req.get_param_value("continue");
      std::int64_t after = 0;
      const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), after);
      if (ec != std::errc() || end != token.data() + token.size() || after < 1) {
        return SendError(res, Error::Code::kInvalidArgument,
                         "continue: expected the continue of a previous page, got " + Quote(token));
      }
      f.continue_after = after;
    }
    JobPage page = c.ListJobs(f);
    Json body = {{"jobs", std::move(page.jobs)}};
    if (page.next_continue > 0) body["continue"] = std::to_string(page.next_continue);
    if (const RequestGuard* g = guard()) g->Cut(req, body);
    SendJson(res, 200, body);
  });
  h.Get(R"(/v1/jobs/(.+))", [&c, guard](const httplib::Request& req, httplib::Response& res) {
    std::string queue, name;
    if (!SplitQueueName(req.matches[1], &queue, &name)) {
      return SendError(res, Error::Code::kInvalidArgument, "expected /v1/jobs/{queue}/{name}");
    }
    auto job = c.GetJob(queue, name);
    if (!job) return SendError(res, job.error());
    if (const RequestGuard* g = guard()) g->Cut(req, *job);
    SendJson(res, 200, *job);
  });
  h.Delete(R"(/v1/jobs/(.+))", [&c](const httplib::Request& req, httplib::Response& res) {
    std::string queue, name;
    if (!SplitQueueName(req.matches[1], &queue, &name)) {
      return SendError(res, Error::Code::kInvalidArgument, "expected /v1/jobs/{queue}/{name}");
    }
    auto job = TruthyParam(req, "purge") ? c.Purge(queue, name) : c.Cancel(queue, name);
    if (!job) return SendError(res, job.error());
    SendJson(res, 202, *job);
  });
}

void ApiServer::ViewRoutes() {
  auto& h = *http_;
  Controller& c = controller_;
  h.Get("/v1/healthz", [&c](const httplib::Request&, httplib::Response& res) {
    // Unready (503) while the store cannot commit, so a balancer or an operator sees it.
    const Json health = c.Health();
    SendJson(res, health.value("ok", false) ? 200 : 503, health);
  });
  h.Get("/v1/status", [&c](const httplib::Request&, httplib::Response& res) {
    SendJson(res, 200, c.ServerStatus());
  });

  h.Get("/v1/nodes", [&c](const httplib::Request&, httplib::Response& res) {
    SendJson(res, 200, {{"nodes", c.ListNodes()}});
  });
  // The operator's node operations (node_operations.h): cordon, uncordon, drain.
  h.Post(R"(/v1/nodes/([a-z0-9-]+)/(cordon|uncordon|drain))",
         [&c](const httplib::Request& req, httplib::Response& res) {
           const std::string op = req.matches[2];
           auto out = c.OperateNode(req.matches[1], op == "cordon"     ? NodeOperation::kCordon
                                                    : op == "uncordon" ? NodeOperation::kUncordon
                                                                       : NodeOperation::kDrain);
           if (!out) return SendError(res, out.error());
           SendJson(res, 200, *out);
         });
  h.Get("/v1/queues", [&c](const httplib::Request&, httplib::Response& res) {
    SendJson(res, 200, {{"queues", c.ListQueues()}});
  });
  h.Get("/v1/export", [&c](const httplib::Request&, httplib::Response& res) {
    auto out = c.Export();
    if (!out) return SendError(res, out.error());
    SendJson(res, 200, *out);
  });
  h.Get("/v1/controllers", [&c](const httplib::Request&, httplib::Response& res) {
    SendJson(res, 200, {{"controllers", c.Controllers()}});
  });
  h.Get("/v1/events", [this, &c](const httplib::Request& req, httplib::Response& res) {
    auto since = IntParam(req, res, "since", 0, 0, INT64_MAX);
    if (!since) return;
    auto wait = IntParam(req, res, "wait", 0, 0, 60);
    if (!wait) return;
    auto limit = IntParam(req, res, "limit", 1000, 1, 10000);
    if (!limit) return;
    auto events = c.Events(*since, *wait * 1000, static_cast<int>(*limit));
    if (!events) return SendError(res, events.error());
    if (guard_) guard_->Cut(req, *events);
    SendJson(res, 200, *events);
  });
}

void ApiServer::LogRoute() {
  auto& h = *http_;
  Controller& c = controller_;
  const AgentClientTls* tls = agent_tls_.get();
  h.Get(R"(/v1/logs/(.+))", [&c, tls](const httplib::Request& req, httplib::Response& res) {
    std::string queue, name;
    if (!SplitQueueName(req.matches[1], &queue, &name)) {
      return SendError(res, Error::Code::kInvalidArgument, "expected /v1/logs/{queue}/{name}");
    }
    auto rank = IntParam(req, res, "rank", 0, 0, kMaxTasksPerJob);
    if (!rank) return;
    auto attempt = IntParam(req, res, "attempt", 0, 0, INT32_MAX);
    if (!attempt) return;
    auto offset = IntParam(req, res, "offset", 0, 0, INT64_MAX);
    if (!offset) return;
    auto limit = IntParam(req, res, "limit", 1 << 20, 1, 16 << 20);
    if (!limit) return;
    auto loc = c.FindLog(queue, name, static_cast<int>(*rank), static_cast<int>(*attempt));
    if (!loc) return SendError(res, loc.error());
    res.set_header("X-Tessera-Task-Id", std::to_string(loc->task_id));
    res.set_header("X-Tessera-Task-State", loc->state);
    if (loc->agent_url.empty()) {
      return SendError(res, Error::Code::kFailedPrecondition,
                       "the task's node has no log endpoint");
    }
    httplib::Client agent = AgentClient(loc->agent_url, *tls);
    const std::string path = "/v1/tasks/" + std::to_string(loc->task_id) +
                             "/log?offset=" + std::to_string(*offset) +
                             "&limit=" + std::to_string(*limit);
    auto r = agent.Get(path.c_str());
    if (!r) {
      return SendError(res, Error::Code::kIo,
                       "the agent at " + loc->agent_url + " did not answer (" +
                           httplib::to_string(r.error()) + ")");
    }
    res.status = r->status;
    res.set_header("X-Tessera-Offset", r->get_header_value("X-Tessera-Offset"));
    res.set_header("X-Tessera-Size", r->get_header_value("X-Tessera-Size"));
    res.set_content(r->body, r->get_header_value("Content-Type").empty()
                                 ? "application/octet-stream"
                                 : r->get_header_value("Content-Type").c_str());
  });
}

std::optional<Denial> ApiServer::CheckNodes(const httplib::Request& req,
                                            const NodesHeartbeatRequest& batch) const {
  if (!guard_) return std::nullopt;
  std::vector<std::string> nodes;
  for (const auto& [node, hb] : batch.nodes) nodes.push_back(node);
  return guard_->CheckAgentNodes(req, nodes);
}

void ApiServer::AgentRoutes() {
  auto& h = *http_;
  Controller& c = controller_;
  PostDocument(h, "/v1/agents/register",
               [this, &c](const httplib::Request& req, httplib::Response& res) {
                 auto doc = ParseJson(req.body);
                 if (!doc)
                   return SendError(res, Error::Code::kInvalidArgument, doc.error().message);
                 auto reg = NodeRegistrationFromJson(*doc);
                 if (!reg)
                   return SendError(res, Error::Code::kInvalidArgument, reg.error().message);
                 std::optional<RegistrationGrant> grant;
                 if (guard_) {
                   auto admitted = guard_->AdmitRegistration(req, reg->node);
                   if (!admitted) return SendDenial(res, admitted.error());
                   grant = *admitted;
                 }
                 auto reply = c.Register(*reg);
                 if (!reply) return SendError(res, reply.error());
                 Json body = ToJson(*reply);
                 if (grant) {
                   if (auto s = guard_->CompleteRegistration(*grant, reg->node); !s)
                     return SendError(res, Error::Code::kIo, s.error().message);
                   if (grant->send_back) body["nodeCredential"] = grant->secret;
                 }
                 SendJson(res, 200, body);
               });
  PostDocument(h, "/v1/agents/heartbeat",
               [this, &c](const httplib::Request& req, httplib::Response& res) {
                 auto wait = IntParam(req, res, "waitMs", 0, 0, 30000);
                 if (!wait) return;
                 auto doc = ParseJson(req.body);
                 if (!doc)
                   return SendError(res, Error::Code::kInvalidArgument, doc.error().message);
                 auto hb = NodesHeartbeatRequestFromJson(*doc);
                 if (!hb) return SendError(res, Error::Code::kInvalidArgument, hb.error().message);
                 if (auto denial = CheckNodes(req, *hb)) return SendDenial(res, *denial);
                 auto reply = c.HeartbeatNodes(*hb, *wait);
                 if (!reply) return SendError(res, reply.error());
                 SendJson(res, 200, ToJson(*reply));
               });
  PostDocument(h, "/v1/agents/status",
               [this, &c](const httplib::Request& req, httplib::Response& res) {
                 auto doc = ParseJson(req.body);
                 if (!doc)
                   return SendError(res, Error::Code::kInvalidArgument, doc.error().message);
                 auto reports = NodesHeartbeatRequestFromJson(*doc);
                 if (!reports)
                   return SendError(res, Error::Code::kInvalidArgument, reports.error().message);
                 if (auto denial = CheckNodes(req, *reports)) return SendDenial(res, *denial);
                 auto done = c.ReportTasks(*reports);
                 if (!done) return SendError(res, done.error());
                 SendJson(res, 200, *done);
               });
  PostDocument(h, R"(/v1/agents/([a-z0-9-]+)/heartbeat)",
               [&c](const httplib::Request& req, httplib::Response& res) {
                 auto wait = IntParam(req, res, "waitMs", 0, 0, 30000);
                 if (!wait) return;
                 auto doc = ParseJson(req.body);
                 if (!doc)
                   return SendError(res, Error::Code::kInvalidArgument, doc.error().message);
                 auto hb = HeartbeatRequestFromJson(*doc);
                 if (!hb) return SendError(res, Error::Code::kInvalidArgument, hb.error().message);
                 auto reply = c.Heartbeat(req.matches[1], *hb, *wait);
                 if (!reply) return SendError(res, reply.error());
                 SendJson(res, 200, ToJson(*reply));
               });
  PostDocument(h, R"(/v1/agents/([a-z0-9-]+)/tasks/([0-9]{1,18})/status)",
               [&c](const httplib::Request& req, httplib::Response& res) {
                 auto doc = ParseJson(req.body);
                 if (!doc)
                   return SendError(res, Error::Code::kInvalidArgument, doc.error().message);
                 if (doc->is_object()) (*doc)["taskId"] = std::stoll(req.matches[2]);
                 auto report = TaskReportFromJson(*doc);
                 if (!report)
                   return SendError(res, Error::Code::kInvalidArgument, report.error().message);
                 auto task = c.ReportTask(req.matches[1], *report);
                 if (!task) return SendError(res, task.error());
                 SendJson(res, 200, *task);
               });
}

}  // namespace tessera
