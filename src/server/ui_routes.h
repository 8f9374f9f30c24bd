// The dashboard, served by the controller at /ui/ (docs/dashboard.md): the files of
// web/dashboard/ and Chart.js, embedded at build time (web/CMakeLists.txt), so tesserad needs
// nothing on disk to serve it. The page uses the REST API only: /v1/status, /v1/nodes,
// /v1/queues, /v1/jobs, /v1/logs, the long-poll /v1/events for its live updates, and
// GET /v1/usage (added here): the GPUs' use as the agents measure it (gpu_usage_feed.h), which the
// browser cannot ask the agents for itself. The page's own files carry no data, so they are
// served to anyone; every API call the page makes carries the bearer token it was given.
#pragma once

namespace httplib {
class Server;
}

namespace tessera {

class Controller;
struct AgentClientTls;

// Installs GET /ui, /ui/, /ui/{file} and /v1/usage (which calls the agents with `agent_tls`,
// outliving the server).
void AddUiRoutes(httplib::Server& server, Controller& controller, const AgentClientTls* agent_tls);

}  // namespace tessera
