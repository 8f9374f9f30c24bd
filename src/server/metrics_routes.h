// GET /metrics on the controller's API server, and the instrumentation of every request
// (count and latency by method, route pattern and code) that feeds it. The request's start is
// noted in the pre-routing handler and read in the logger, which cpp-httplib runs on the same
// worker thread once the response is written.
//
// cpp-httplib has one pre-routing handler, the server's (ApiServer::PreRouting, which also
// authenticates): it must call NoteRequestStart first, or requests are counted without their
// latency.
#pragma once

namespace httplib {
class Server;
struct Request;
}  // namespace httplib

namespace tessera {

class Controller;

// Installs /metrics and the logger that counts each request.
void AddMetricsRoutes(httplib::Server& server, Controller& controller);
// Notes that `req` starts now (for its latency). Call it first in a pre-routing handler.
void NoteRequestStart(const httplib::Request& req);

}  // namespace tessera
