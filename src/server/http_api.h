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
//   GET    /ui/                              the dashboard (ui_routes.h, docs/dashboard.md)
//
// Handlers catch every exception at this edge; a bad request never takes the controller down.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "server/controller.h"

namespace httplib {
class Server;
}

namespace tessera {

class ApiServer {
 public:
  explicit ApiServer(Controller& controller, int threads = 128);
  ~ApiServer();

  // Binds `host`:`port` (0 = any free port); returns the port bound.
  Result<int> Bind(const std::string& host, int port);
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
  Controller& controller_;
  std::unique_ptr<httplib::Server> http_;
};

}  // namespace tessera
