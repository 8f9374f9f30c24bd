// vLLM's KV events over ZeroMQ (the engine's --kv-events-config publisher "zmq"): where each
// replica publishes them, and one subscription per replica that decodes each batch
// (vllm_kv_events.h), re-keys its blocks into the gateway's own (serve::EngineBlockKeys) and
// applies them to the service's block index. A message is [topic, sequence (8 bytes, big
// endian), payload]; a gap in the sequence is logged, not repaired (vLLM's replay socket is not
// used), and the index's per-replica bound ages out what a lost removal leaves behind.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "core/status.h"
#include "gateway/service_routes.h"

namespace tessera::gateway {

struct KvEventSources {
  std::map<std::string, std::string> endpoints;  // replica base URL -> tcp://HOST:PORT
  // > 0: a replica not named above publishes on its own host at its HTTP port + this.
  int port_offset = 0;
  std::string topic;  // ZMQ subscription prefix; "" takes every topic
  bool any() const { return !endpoints.empty() || port_offset > 0; }
};

// Parses one --kv-events-endpoint value, URL=tcp://HOST:PORT. Errors name the flag.
Status AddKvEventEndpoint(const std::string& value, KvEventSources* sources);

// The ZMQ endpoint of the replica at `url`, if it has one.
std::optional<std::string> ZmqEndpointFor(const KvEventSources& sources, const std::string& url);

// Follows the replica's stream until *stop is set or the replica leaves the service; sets
// *running to false when it returns.
void FollowZmqKvEvents(std::shared_ptr<ServiceRoutes> service, std::string url,
                       std::string endpoint, std::string topic,
                       std::shared_ptr<std::atomic<bool>> running,
                       std::shared_ptr<std::atomic<bool>> stop);

}  // namespace tessera::gateway
