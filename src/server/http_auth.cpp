#include "server/http_auth.h"

#include <httplib.h>

#include "server/secrets.h"
#include "spec/document.h"
#include "spec/protocol.h"

namespace tessera {

namespace {

using Json = nlohmann::json;

std::string BearerOf(const httplib::Request& req) {
  const std::string h = req.get_header_value("Authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (h.size() <= kBearer.size() || !h.starts_with(kBearer)) return "";
  return h.substr(kBearer.size());
}

// "{queue...}/{name}" after `prefix`; empty when the path has no name.
std::string QueueOfPath(const std::string& path, std::string_view prefix) {
  const std::string rest = path.substr(prefix.size());
  const auto slash = rest.rfind('/');
  return slash == std::string::npos ? "" : rest.substr(0, slash);
}

void RemoveEnv(Json& job) {
  if (!job.is_object() || !job.contains("spec") || !job["spec"].is_object()) return;
  Json& spec = job["spec"];
  spec.erase("env");
  if (spec.contains("spec") && spec["spec"].is_object()) spec["spec"].erase("env");
}

std::string QueueOfEventObject(const std::string& object) {
  if (!object.starts_with("job/")) return "";
  const auto slash = object.rfind('/');
  return slash <= 4 ? "" : object.substr(4, slash - 4);
}

}  // namespace

void SendDenial(httplib::Response& res, const Denial& denial) {
  res.status = denial.status;
  if (denial.status == 401) res.set_header("WWW-Authenticate", "Bearer realm=\"tessera\"");
  // The body of a refused request may not have been read: the connection cannot be reused.
  res.set_header("Connection", "close");
  const Json body = {{"error",
                      {{"code", denial.status == 401 ? "Unauthenticated" : "PermissionDenied"},
                       {"message", denial.message},
                       {"details", Json::array()}}}};
  res.set_content(DumpJson(body) + "\n", "application/json");
}

std::optional<AccessRequest> RouteAccess(const std::string& method, const std::string& path,
                                         bool purge) {
  const bool get = method == "GET" || method == "HEAD";
  if (path == "/v1/healthz") return AccessRequest{Action::kHealth, "", {}};
  // The dashboard's files hold no data (a browser fetches them without a header; the page then
  // sends its token with every API call), so they are as open as liveness.
  if (get && (path == "/ui" || path.starts_with("/ui/")))
    return AccessRequest{Action::kHealth, "", {}};
  if (path == "/v1/status") return AccessRequest{Action::kStatus, "", {}};
  if (path == "/metrics" || path == "/v1/metrics") return AccessRequest{Action::kMetrics, "", {}};
  if (path == "/v1/nodes" && get) return AccessRequest{Action::kListNodes, "", {}};
  if (path == "/v1/nodes/changes" && get) return AccessRequest{Action::kListNodes, "", {}};
  if ((path == "/v1/queues" || path == "/v1/queues/history") && get)
    return AccessRequest{Action::kListQueues, "", {}};
  if (path == "/v1/events" && get) return AccessRequest{Action::kWatchEvents, "", {}};
  if (path == "/v1/export" && get) return AccessRequest{Action::kExport, "", {}};
  if (path == "/v1/jobs") return AccessRequest{get ? Action::kListJobs : Action::kSubmit, "", {}};
  if (path == "/v1/release") return AccessRequest{Action::kRelease, "", {}};
  if (path.starts_with("/v1/jobs/")) {
    const std::string queue = QueueOfPath(path, "/v1/jobs/");
    if (get) return AccessRequest{Action::kReadJob, queue, {}};
    return AccessRequest{purge ? Action::kPurge : Action::kCancel, queue, {}};
  }
  if (path.starts_with("/v1/logs/")) {
    return AccessRequest{Action::kReadLogs, QueueOfPath(path, "/v1/logs/"), {}};
  }
  if (path.starts_with("/v1/exec/")) {
    return AccessRequest{Action::kExec, QueueOfPath(path, "/v1/exec/"), {}};
  }
  if (path == "/v1/agents/register" || path == "/v1/agents/register-nodes") return std::nullopt;
  if (path == "/v1/agents/heartbeat" || path == "/v1/agents/status") {
    return AccessRequest{Action::kAgent, "", {}};  // the nodes are in the body
  }
  if (path.starts_with("/v1/agents/")) {
    const std::string rest = path.substr(std::string_view("/v1/agents/").size());
    return AccessRequest{Action::kAgent, "", {rest.substr(0, rest.find('/'))}};
  }
  // Routes this table does not know yet: reads for any user, writes for admins.
  return AccessRequest{get ? Action::kListNodes : Action::kPurge, get ? "" : "*", {}};
}

Caller RequestGuard::Identify(const httplib::Request& req, bool* bad_token) const {
  Caller c;
  const std::string token = BearerOf(req);
  if (bad_token != nullptr) *bad_token = false;
  if (token.empty()) return c;
  if (const UserIdentity* user = users_.Find(token)) {
    c.kind = Caller::Kind::kUser;
    c.name = user->user;
    c.groups = user->groups;
    return c;
  }
  if (auto nodes = nodes_->NodesOf(token); !nodes.empty()) {
    c.kind = Caller::Kind::kNode;
    c.name = *nodes.begin();
    c.nodes = std::move(nodes);
    return c;
  }
  if (bad_token != nullptr) *bad_token = true;
  return c;
}

std::optional<Denial> RequestGuard::Check(const httplib::Request& req,
                                          const AccessRequest& access) const {
  bool bad_token = false;
  const Caller caller = Identify(req, &bad_token);
  if (access.action != Action::kHealth && caller.kind == Caller::Kind::kAnonymous) {
    return Denial{401, bad_token ? "the bearer token is not valid (unknown token)"
                                 : "authentication required: send Authorization: Bearer TOKEN "
                                   "(tessera --token, TESSERA_TOKEN or the context file)"};
  }
  if (auto d = Authorize(caller, access); !d.allowed) return Denial{403, d.reason};
  return std::nullopt;
}

std::optional<Denial> RequestGuard::CheckJobAction(const httplib::Request& req, Action action,
                                                   const std::string& queue) const {
  return Check(req, AccessRequest{action, queue, {}});
}

std::optional<Denial> RequestGuard::CheckAgentNodes(const httplib::Request& req,
                                                    const std::vector<std::string>& nodes) const {
  return Check(req, AccessRequest{Action::kAgent, "", nodes});
}

// One node is a batch of one: the same checks, the same answers.
std::expected<RegistrationGrant, Denial> RequestGuard::AdmitRegistration(
    const httplib::Request& req, const std::string& node) const {
  return AdmitRegistrations(req, std::vector<std::string>{node});
}

Status RequestGuard::CompleteRegistration(const RegistrationGrant& grant,
                                          const std::string& node) const {
  return nodes_->Bind(node, grant.secret);
}

std::expected<RegistrationGrant, Denial> RequestGuard::AdmitRegistrations(
    const httplib::Request& req, const std::vector<std::string>& nodes) const {
  const std::string bearer = BearerOf(req);
  const auto covered = nodes_->NodesOf(bearer);
  bool all_covered = true;
  for (const auto& node : nodes) {
    if (covered.contains(node)) continue;
    all_covered = false;
    if (nodes_->HasCredential(node)) {
      return std::unexpected(
          Denial{bearer.empty() ? 401 : 403,
                 "node " + node +
                     " is registered with a credential of its own; only that credential may "
                     "register it again"});
    }
  }
  if (all_covered) return RegistrationGrant{bearer, false};
  std::string bootstrap = req.get_header_value("X-Tessera-Bootstrap-Token");
  if (bootstrap.empty()) bootstrap = bearer;
  if (!nodes_->IsBootstrapToken(bootstrap)) {
    return std::unexpected(Denial{bootstrap.empty() ? 401 : 403,
                                  "registering a new node needs the cluster's bootstrap token "
                                  "(tessera-agent --bootstrap-token-file)"});
  }
  if (!covered.empty()) return RegistrationGrant{bearer, false};  // more emulated nodes
  auto secret = RandomSecret();
  if (!secret) return std::unexpected(Denial{500, secret.error().message});
  return RegistrationGrant{*secret, true};
}

Status RequestGuard::CompleteRegistrations(const RegistrationGrant& grant,
                                           const std::vector<std::string>& nodes) const {
  return nodes_->BindAll(nodes, grant.secret);
}

std::function<bool(const std::string&)> RequestGuard::NodeScopeOf(
    const httplib::Request& req) const {
  auto covered = std::make_shared<const std::set<std::string>>(nodes_->NodesOf(BearerOf(req)));
  return [covered](const std::string& node) { return covered->contains(node); };
}

void RequestGuard::Cut(const httplib::Request& req, Json& body) const {
  const bool jobs = req.path == "/v1/jobs", job = req.path.starts_with("/v1/jobs/"),
             events = req.path == "/v1/events";
  if (!jobs && !job && !events) return;
  const Caller caller = Identify(req);
  if (RolesOf(caller.groups).admin) return;
  Json* doc = &body;
  if (!doc->is_object()) return;
  if (job) {
    if (!MaySeeEnv(caller, doc->value("queue", ""))) RemoveEnv(*doc);
  } else if (jobs && (*doc)["jobs"].is_array()) {
    Json kept = Json::array();
    for (auto& j : (*doc)["jobs"]) {
      const std::string queue = j.is_object() && j.contains("metadata")
                                    ? j["metadata"].value("queue", "default")
                                    : j.value("queue", "default");
      if (!MaySeeQueue(caller, queue)) continue;
      if (!MaySeeEnv(caller, queue)) RemoveEnv(j);
      kept.push_back(std::move(j));
    }
    (*doc)["jobs"] = std::move(kept);
  } else if (events && (*doc)["events"].is_array()) {
    Json kept = Json::array();
    for (auto& e : (*doc)["events"]) {
      const std::string queue = QueueOfEventObject(e.value("object", ""));
      if (queue.empty() || MaySeeQueue(caller, queue)) kept.push_back(std::move(e));
    }
    (*doc)["events"] = std::move(kept);
  }
}

std::optional<Denial> RequestGuard::Screen(const httplib::Request& req) const {
  const std::string p = req.has_param("purge") ? req.get_param_value("purge") : "";
  const bool purge = p == "true" || p == "1" || p == "yes";
  auto access = RouteAccess(req.method, req.path, purge);
  if (!access) return std::nullopt;  // registration: AdmitRegistration decides
  return Check(req, *access);
}

}  // namespace tessera
