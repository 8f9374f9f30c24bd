// The controller's REST API over HTTP/JSON (cpp-httplib), bound to 127.0.0.1 unless told
// otherwise. Routes (all JSON unless noted; errors are {"error": {code, message, details}}):
//
//   GET    /v1/healthz                      liveness; schedulerError when it cannot schedule
//   GET    /v1/status                       counters, load time, first decision, schedulerError
//   POST   /v1/jobs?hold=&queueAnyway=      body: a job spec (YAML or JSON) -> 201 + job;
//                                            409 when it can never fit the registered nodes
//                                            (queueAnyway=true stores it anyway)
//   GET    /v1/jobs?queue=&name=&phase=&limit=&view=&order=   view=object: resubmittable
//                                            objects; order=newest: newest first (default oldest)
//   GET    /v1/jobs/{queue...}/{name}       job with units, tasks and events
//   DELETE /v1/jobs/{queue...}/{name}       cancel (202); ?purge=true deletes a finished job
//   GET    /v1/nodes | /v1/queues
//   GET    /v1/controllers                  [{url, pid, leader}]: every controller (etcd: all)
//   GET    /v1/events?since=SEQ&wait=SECONDS&limit=N   long-poll watch
//   GET    /v1/logs/{queue...}/{name}?rank=&attempt=&offset=&limit=  text, from the agent
//   POST   /v1/agents/register
//   POST   /v1/agents/{node}/heartbeat?waitMs=N
//   POST   /v1/agents/{node}/tasks/{id}/status
//   GET    /metrics                          Prometheus text (metrics_routes.h, docs/metrics.md)
//   GET    /v1/usage                         GPU use read from the agents (ui_routes.h)
//   GET    /v1/queues/history?sinceMs=       dominant share per queue, last hour (ui_routes.h)
//   GET    /v1/nodes/changes?since=GEN       nodes changed since a generation (ui_routes.h)
//   GET    /ui/                              the dashboard (ui_routes.h, docs/dashboard.md)
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
#include "server/agent_client.h"
#include "server/controller.h"
#include "server/exec_session_table.h"
#include "server/http_auth.h"
#include "server/http_frontend.h"
#include "server/tls_socket.h"

namespace tessera {

class ApiServer {
 public:
  explicit ApiServer(Controller& controller, int threads = 128);
  ~ApiServer();
  // Deadlines, connection cap and worker pools (http_frontend.h). Call before Bind().
  void SetLimits(const FrontendLimits& limits);
  // HTTPS only, with this certificate chain and private key (PEM), TLS inside the front end
  // (tls_socket.h). Call before Bind(). Errors name the file and OpenSSL's reason.
  Status EnableTls(const std::string& cert_file, const std::string& key_file);

  // Binds `host`:`port` (0 = any free port); returns the port bound.
  Result<int> Bind(const std::string& host, int port);
  // Authenticates and authorises every request with `guard`. Call before Serve().
  void RequireAuth(std::shared_ptr<const RequestGuard> guard);
  // How task logs, exec and GPU usage reach the agents (agent_client.h). Call before Serve().
  void SetAgentTls(const AgentClientTls& tls) { *agent_tls_ = tls; }
  // Caps on open `tessera exec` sessions (exec_session_table.h).
  void SetExecLimits(const ExecSessionLimits& limits);
  // Serves until Stop(). REQUIRES: Bind succeeded.
  void Serve();
  void Stop();

 private:
  void Routes();
  void ErrorRoutes();
  void JobRoutes();   // submit, release, list, get, cancel, purge
  void ViewRoutes();  // healthz, status, nodes, queues, events
  void LogRoute();    // task logs, proxied from the agents
  void ExecRoutes();  // `tessera exec` sessions, proxied to the agents (exec_routes.cpp)
  void AgentRoutes();
  // With a guard, whether the caller may act for every node of a batched agent call.
  std::optional<Denial> CheckNodes(const httplib::Request& req,
                                   const NodesHeartbeatRequest& batch) const;
  Controller& controller_;
  // The one pre-routing handler httplib allows: notes the request's start for its latency
  // (metrics_routes.h) and, with a guard, authenticates and authorises it.
  void PreRouting();
  std::unique_ptr<RoutedServer> http_;  // routes only: the front end owns the connections
  std::unique_ptr<AgentClientTls> agent_tls_ = std::make_unique<AgentClientTls>();
  std::shared_ptr<ExecSessionTable> exec_sessions_ = std::make_shared<ExecSessionTable>();
  FrontendLimits limits_;
  std::unique_ptr<TlsContext> tls_;            // EnableTls(); null: plain HTTP
  std::unique_ptr<HttpFrontend> front_;        // from Bind()
  std::shared_ptr<const RequestGuard> guard_;  // null: no authentication (--insecure)
};

}  // namespace tessera
