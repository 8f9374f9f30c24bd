// One InferenceService as the gateway routes it: its replicas (slots, each a base URL), what the
// gateway knows of each replica's load (its own requests in flight: waiting for the first token,
// or decoding; serve::RoutedLoad, which the simulator can route on too), readiness (present in
// discovery and answering), and the serving core's Router (src/serve/router.h: the KV block index
// and the service's policy). A slot keeps its index while its URL stays; a URL that leaves frees
// its slot. Thread-safe (one mutex per service).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/engine_profile.h"
#include "core/status.h"
#include "serve/kv_cache.h"
#include "serve/routed_load.h"
#include "serve/router.h"

namespace tessera::gateway {

struct ServiceConfig {
  std::string name;                 // "queue/name" from the controller, or "default" for --backend
  std::vector<std::string> models;  // model names routed here; empty = any
  std::string policy = "least-request";
  int block_tokens = 16;
  double slo_ttft_ms = 0;  // 0 = none: the tessera policy then never refuses
  double slo_tbt_ms = 0;
  std::vector<std::string> backends;  // base URLs ("http://127.0.0.1:8001") of its replicas
  bool assume_ready = false;          // new backends start ready (--backend) or wait for a probe
  friend bool operator==(const ServiceConfig&, const ServiceConfig&) = default;
};

struct ReplicaView {
  int slot = -1;
  std::string url;
  bool ready = false;
  std::int32_t in_flight = 0;
  std::string last_error;
  std::int32_t waiting = 0;         // of in_flight, those still waiting for their first token
  std::int64_t indexed_blocks = 0;  // blocks the index places on it (routing and KV events)
};

class ServiceRoutes {
 public:
  // Errors: an unknown policy name.
  static Result<std::unique_ptr<ServiceRoutes>> Make(const ServiceConfig& config,
                                                     const EngineProfile& engine);

  struct Pick {
    int slot = -1;  // -1: refused, `reason` says why
    std::string url;
    serve::RejectReason reason = serve::RejectReason::kNone;
    double predicted_ttft_ms = 0;
    std::int64_t matched_tokens = 0;  // prompt tokens the index says the replica holds
    std::int64_t prompt_tokens = 0, output_tokens = 0;
  };
  // Routes one request, leaving out the slots in `exclude` (replicas already tried).
  Pick Route(std::span<const serve::BlockHash> blocks, std::int64_t prompt_tokens,
             std::int64_t output_tokens, std::span<const int> exclude);
  // The request's first token came back: its prefill is no longer queued.
  void FirstToken(const Pick& pick);
  // The request ended (whatever the outcome); `first_token` says whether FirstToken was called.
  void Finished(const Pick& pick, bool first_token);
  // The replica at `url` failed (connection refused, died mid-stream) or answered a probe.
  void MarkDead(const std::string& url, const std::string& reason);
  void MarkHealthy(const std::string& url);
  // A health probe failed: out of rotation after kProbeFailuresToDead in a row (one slow probe
  // on a busy replica is not a dead replica; a refused request is, at once: MarkDead).
  void ProbeFailed(const std::string& url, const std::string& reason);
  static constexpr int kProbeFailuresToDead = 2;
  // Returns how many stored blocks the index already placed on that replica (Router's).
  std::int64_t ApplyKvEvents(const std::string& url, std::span<const serve::KvEvent> events);
  // What the index may hold per replica (its capacity without events): a bound for mappings.
  std::int64_t index_capacity() const;
  // Discovery's new set of replicas (and settings); slots of URLs that stay keep their state.
  void Update(const ServiceConfig& config);

  std::vector<ReplicaView> Replicas() const;
  bool HasReadyReplica() const;
  // Requests waiting for a first ready replica (ProxyOptions::cold_start_wait_ms).
  void AwaitReplica(int delta) { awaiting_replica_ += delta; }
  std::int32_t awaiting_replica() const { return awaiting_replica_; }
  ServiceConfig config() const;
  std::string policy_name() const;
  int block_tokens() const;

 private:
  struct Slot {
    std::string url;
    bool present = false;  // in the discovered set
    bool healthy = false;  // answering (probe, or requests succeeding)
    int failed_probes = 0;
    std::string last_error;
  };
  ServiceRoutes(ServiceConfig config, EngineProfile engine, std::unique_ptr<serve::Router> router,
                int capacity);
  static serve::RoutedLoad::Ticket TicketOf(const Pick& pick);
  int SlotOfLocked(const std::string& url) const;
  void RebuildRouterLocked(int capacity);

  mutable std::mutex mu_;
  ServiceConfig config_;
  EngineProfile engine_;
  std::unique_ptr<serve::Router> router_;
  std::vector<Slot> slots_;
  serve::RoutedLoad routed_;  // the requests in flight per slot (serve's load accounting)
  std::vector<serve::ReplicaLoad> loads_;
  std::atomic<std::int32_t> awaiting_replica_{0};
};

// The router settings of a service: its SLOs; no TTFT SLO means never refuse.
serve::RoutingConfig RoutingConfigOf(const ServiceConfig& config);

}  // namespace tessera::gateway
