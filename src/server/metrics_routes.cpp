#include "server/metrics_routes.h"

#include <httplib.h>

#include <chrono>
#include <optional>

#include "core/metrics_text.h"
#include "server/controller.h"
#include "server/request_lock_wait.h"

namespace tessera {

namespace {

using Clock = std::chrono::steady_clock;

// When the request this worker thread serves arrived, and which request that is: a logger
// that sees another request (no pre-routing note) counts it without a latency.
thread_local Clock::time_point request_start;
thread_local const httplib::Request* request_noted = nullptr;

}  // namespace

void NoteRequestStart(const httplib::Request& req) {
  request_start = Clock::now();
  request_noted = &req;
  TakeLockWaitSeconds();  // what an earlier request on this thread left uncounted
}

void AddMetricsRoutes(httplib::Server& server, Controller& controller) {
  server.set_logger([&controller](const httplib::Request& req, const httplib::Response& res) {
    std::optional<double> seconds;
    if (request_noted == &req)
      seconds = std::chrono::duration<double>(Clock::now() - request_start).count();
    request_noted = nullptr;
    controller.metrics().Request(req.method, ApiRouteLabel(req.path), res.status, seconds,
                                 TakeLockWaitSeconds());
  });
  server.Get("/metrics", [&controller](const httplib::Request&, httplib::Response& res) {
    res.set_content(controller.MetricsText(), MetricsWriter::kContentType);
  });
}

}  // namespace tessera
