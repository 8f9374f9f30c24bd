// Keeps the gateway's view of its replicas current, on its own threads:
//   - health: every interval, GET /health on each replica of each service; a replica that
//     answers 200 is ready, one that fails two probes in a row is out of rotation until it
//     answers again;
//   - KV events: for each ready replica, a subscription that corrects the service's block
//     index: vLLM's ZMQ stream where the replica has an endpoint (zmq_kv_feed.h: a real vLLM
//     started with --kv-events-config, or tessera-engine-sim --kv-events-endpoint), else GET
//     /v1/kv_events (the simulated engine's SSE stream of BlockStored / BlockRemoved /
//     AllBlocksCleared). A replica that answers 404 there offers none (a real vLLM or SGLang
//     server) and is not asked again; the index then learns from routing decisions alone.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "gateway/service_registry.h"
#include "gateway/zmq_kv_feed.h"

namespace tessera::gateway {

class ReplicaMonitor {
 public:
  ReplicaMonitor(ServiceRegistry& registry, int interval_ms, bool kv_events,
                 KvEventSources zmq_sources = {});
  ~ReplicaMonitor();
  ReplicaMonitor(const ReplicaMonitor&) = delete;
  ReplicaMonitor& operator=(const ReplicaMonitor&) = delete;

 private:
  struct Feed {
    std::shared_ptr<std::atomic<bool>> running = std::make_shared<std::atomic<bool>>(false);
    std::shared_ptr<std::atomic<bool>> unsupported = std::make_shared<std::atomic<bool>>(false);
  };
  void Loop();
  void ProbeOnce();
  void EnsureFeed(const std::shared_ptr<ServiceRoutes>& service, const std::string& url);

  ServiceRegistry& registry_;
  int interval_ms_;
  bool kv_events_;
  KvEventSources zmq_sources_;
  std::shared_ptr<std::atomic<bool>> stop_ = std::make_shared<std::atomic<bool>>(false);
  std::mutex mu_;
  std::map<std::string, Feed> feeds_;  // by service name + " " + url
  std::thread thread_;
};

// Parses one KV event message of the simulated engine's stream into serve's events.
// Unknown event types are skipped; a malformed message gives an empty list.
std::vector<serve::KvEvent> ParseKvEventMessage(std::string_view json);

}  // namespace tessera::gateway
