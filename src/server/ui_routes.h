// The dashboard, served by the controller at /ui/ (docs/dashboard.md): the files of
// web/dashboard/ and Chart.js, embedded at build time (web/CMakeLists.txt), so tesserad needs
// nothing on disk to serve it. The page uses the REST API only: /v1/status, /v1/nodes,
// /v1/queues, /v1/jobs, /v1/logs, the long-poll /v1/events for its live updates, and
// three routes added here: GET /v1/usage, the GPUs' use as the agents measure it
// (gpu_usage_feed.h), which the browser cannot ask the agents for itself; GET /v1/queues/history,
// each queue's dominant share over the last hour (queue_history.h); and GET /v1/nodes/changes,
// the nodes changed since a generation (node_changes.h). The page's own files carry no data, so
// they are served to anyone; every API call the page makes carries the bearer token it was given.
#pragma once

namespace httplib {
class Server;
}

namespace tessera {

class Controller;
struct AgentClientTls;

// Installs GET /ui, /ui/, /ui/{file}, /v1/usage (which calls the agents with `agent_tls`,
// outliving the server), /v1/queues/history (sampling the queues from now on) and
// /v1/nodes/changes.
void AddUiRoutes(httplib::Server& server, Controller& controller, const AgentClientTls* agent_tls);

}  // namespace tessera
