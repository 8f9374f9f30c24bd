// Authentication and authorisation at the HTTP edge of tesserad. Every request but healthz
// carries `Authorization: Bearer TOKEN`: a user's token (auth_tokens.h) or a node's credential
// (node_credentials.h). Screen(), called before routing (ApiServer's pre-routing handler),
// identifies the caller (401 when it cannot) and authorises the route by its path (403 with
// the reason). The route handlers call the rest: Cut() on lists and job views (jobs and job events
// of other teams dropped, env removed where the caller may not read it: before the response is
// encoded, so compression cannot hide it), and the checks that need the body (submit's queue,
// release, a batched agent call's nodes, registration).
//
// Thread-safety: all methods are const and thread-safe.
#pragma once

#include <expected>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "server/auth_tokens.h"
#include "server/authorizer.h"
#include "server/node_credentials.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace tessera {

// A refused request: 401 (not authenticated) or 403 (not allowed), with the reason.
struct Denial {
  int status = 403;
  std::string message;
};
void SendDenial(httplib::Response& res, const Denial& denial);

// What a registration may do once the node is registered: bind `secret` to the node, and send
// it back when it is new to the agent.
struct RegistrationGrant {
  std::string secret;
  bool send_back = false;
};

// The access a route needs, from its method and path alone (`purge`: DELETE ?purge=true).
// nullopt for the registration route, which RequestGuard::AdmitRegistration decides.
std::optional<AccessRequest> RouteAccess(const std::string& method, const std::string& path,
                                         bool purge);

class RequestGuard {
 public:
  RequestGuard(TokenTable users, std::shared_ptr<NodeCredentials> nodes)
      : users_(std::move(users)), nodes_(std::move(nodes)) {}

  // Before routing: the denial of `req` by its route alone, or nullopt to route it.
  std::optional<Denial> Screen(const httplib::Request& req) const;

  // The caller of `req`; `bad_token` set when a bearer token was given but is nobody's.
  Caller Identify(const httplib::Request& req, bool* bad_token = nullptr) const;

  std::optional<Denial> CheckJobAction(const httplib::Request& req, Action action,
                                       const std::string& queue) const;
  // The nodes a batched agent call (POST /v1/agents/heartbeat, /v1/agents/status) names.
  std::optional<Denial> CheckAgentNodes(const httplib::Request& req,
                                        const std::vector<std::string>& nodes) const;
  // A registration of `node`: its own credential, or the bootstrap token for a node that has
  // none (joining the agent's credential when it presents one).
  std::expected<RegistrationGrant, Denial> AdmitRegistration(const httplib::Request& req,
                                                             const std::string& node) const;
  Status CompleteRegistration(const RegistrationGrant& grant, const std::string& node) const;
  // A batched registration (POST /v1/agents/register-nodes): each node admitted as
  // AdmitRegistration admits it, all under one credential; refused whole when one node is.
  std::expected<RegistrationGrant, Denial> AdmitRegistrations(
      const httplib::Request& req, const std::vector<std::string>& nodes) const;
  Status CompleteRegistrations(const RegistrationGrant& grant,
                               const std::vector<std::string>& nodes) const;
  // Whether the caller of `req` (a node credential) may act for a node; for a delta heartbeat's
  // answer, which names nodes the request did not.
  std::function<bool(const std::string&)> NodeScopeOf(const httplib::Request& req) const;
  // Cuts the answer of GET /v1/jobs, /v1/jobs/{queue}/{name} or /v1/events to what the caller
  // may see; other routes' bodies are left alone.
  void Cut(const httplib::Request& req, nlohmann::json& body) const;

 private:
  std::optional<Denial> Check(const httplib::Request& req, const AccessRequest& access) const;

  TokenTable users_;
  std::shared_ptr<NodeCredentials> nodes_;
};

}  // namespace tessera
