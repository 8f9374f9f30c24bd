// The controller's REST API over HTTP/JSON (cpp-httplib), bound to 127.0.0.1 unless told
// otherwise. Routes (all JSON unless noted; errors are {"error": {code, message, details}}):
//
//   GET    /v1/healthz                      liveness; schedulerError when it cannot schedule
//   GET    /v1/status                       counters, load time, first decision, schedulerError
//   POST   /v1/jobs?hold=&queueAnyway=      body: a job spec (YAML or JSON) -> 201 + job;
//                                            409 when it can never fit the registered nodes
//                                            (queueAnyway=true stores it anyway)
//   GET    /v1/jobs?queue=&name=&phase=&limit=&view=   view=object: resubmittable objects
//   GET    /v1/jobs/{queue...}/{name}       job with units, tasks and events
//   DELETE /v1/jobs/{queue...}/{name}       cancel (202); ?purge=true deletes a finished job
//   GET    /v1/nodes | /v1/queues
//   GET    /v1/events?since=SEQ&wait=SECONDS&limit=N   long-poll watch
//   GET    /v1/logs/{queue...}/{name}?rank=&attempt=&offset=&limit=  text, from the agent
//   POST   /v1/agents/register
//   POST   /v1/agents/{node}/heartbeat?waitMs=N
//   POST   /v1/agents/{node}/tasks/{id}/status
//
// With RequireAuth (tesserad without --insecure) every route but healthz needs a bearer token
// and is authorised by role (http_auth.h); without it the API is open, for loopback only.
//
// Handlers catch every exception at this edge; a bad request never takes the controller down.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "core/status.h"
#include "server/controller.h"
#include "server/http_auth.h"

namespace httplib {
class Server;
struct Request;
}  // namespace httplib

namespace tessera {

class ApiServer {
 public:
  // With `tls` (certificate and private key files, PEM) the server speaks HTTPS only.
  struct TlsFiles {
    std::string cert_file;
    std::string key_file;
  };
  explicit ApiServer(Controller& controller, int threads = 128, const TlsFiles* tls = nullptr);
  // False when the TLS certificate or key could not be loaded.
  bool valid() const;
  ~ApiServer();

  // Binds `host`:`port` (0 = any free port); returns the port bound.
  Result<int> Bind(const std::string& host, int port);
  // Authenticates and authorises every request with `guard`. Call before Serve().
  void RequireAuth(std::shared_ptr<const RequestGuard> guard);
  // Serves until Stop(). REQUIRES: Bind succeeded.
  void Serve();
  void Stop();

 private:
  void Routes();
  void ErrorRoutes();
  void JobRoutes();   // submit, release, list, get, cancel, purge
  void ViewRoutes();  // healthz, status, nodes, queues, events
  void LogRoute();    // task logs, proxied from the agents
  void AgentRoutes();
  // With a guard, whether the caller may act for every node of a batched agent call.
  std::optional<Denial> CheckNodes(const httplib::Request& req,
                                   const NodesHeartbeatRequest& batch) const;
  Controller& controller_;
  std::unique_ptr<httplib::Server> http_;
  std::shared_ptr<const RequestGuard> guard_;  // null: no authentication (--insecure)
};

}  // namespace tessera
