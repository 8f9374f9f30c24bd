// The gateway's HTTP API (cpp-httplib): the OpenAI-compatible front door and its own views.
//   POST /v1/completions, POST /v1/chat/completions: validated (400 naming the field), routed
//        with the service's policy, proxied to the chosen replica; streamed (SSE) through as it
//        arrives. A replica that fails before the first token (refused, reset, 503) is left
//        out and the request goes to another one; a replica that dies mid-stream ends that
//        stream with an error event and leaves rotation. Refusals: 429 (the tessera policy's
//        early rejection, with the reason), 503 (no ready replica, all failed, or the
//        gateway's own in-flight bound).
//   GET  /v1/models, /health, /metrics (tessera_gateway_*), /v1/services (replicas, readiness).
#pragma once

#include <atomic>
#include <cstdint>

#include "gateway/gateway_metrics.h"
#include "gateway/service_registry.h"

namespace httplib {
class Server;
}

namespace tessera::gateway {

struct ProxyOptions {
  int max_attempts = 3;               // replicas tried per request before the first token
  std::int32_t max_in_flight = 4096;  // requests beyond this are shed with 503
  // A request for a service with no ready replica waits up to this long for one (scale from
  // zero: the controller's autoscaler sees it waiting, docs/autoscaling.md); 0 = 503 at once.
  int cold_start_wait_ms = 0;
};

struct GatewayContext {
  ServiceRegistry* registry = nullptr;
  GatewayMetrics* metrics = nullptr;
  ProxyOptions options;
  std::atomic<std::int32_t> in_flight{0};
};

// Registers the handlers. `ctx` must outlive the server.
void RegisterGatewayApi(httplib::Server& server, GatewayContext& ctx);

}  // namespace tessera::gateway
