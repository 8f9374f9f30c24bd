// The routing framework: one per service. It keeps the KV block index, matches each request's
// blocks against it, leaves replicas that are not ready out, asks the service's policy, and
// records the decision in the index (the chosen replica will hold the prompt's blocks). The
// replicas' KV events correct the index afterwards. The simulator and the gateway both route
// through this class. Not thread-safe; deterministic.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/engine_profile.h"
#include "serve/kv_block_index.h"
#include "serve/kv_cache.h"
#include "serve/routing_policy.h"

namespace tessera::serve {

// The per-replica bound on the index a router in front of real engines keeps (the gateway's):
// no more blocks than the engine profile's KV cache holds, so that without KV events it forgets
// each replica's least recently routed blocks.
std::int64_t IndexCapacityFor(const EngineProfile& engine, int block_tokens);

class Router {
 public:
  // REQUIRES: policy != nullptr, replicas > 0, block_tokens > 0. index_capacity_per_replica:
  // see KvBlockIndex (0 when the replicas send KV events).
  Router(std::unique_ptr<RoutingPolicy> policy, int replicas, int block_tokens,
         EngineProfile engine, RoutingConfig config, std::int64_t index_capacity_per_replica = 0);

  // REQUIRES: loads.size() == replicas.
  RouteDecision Route(const RouteRequest& request, std::span<const ReplicaLoad> loads);
  // Returns how many stored blocks the index already placed on the replica (its routing
  // decisions named the same blocks: the engine's keys agree with the router's). Once some did,
  // the replica's index capacity no longer applies (KvBlockIndex::SetBounded): its events keep
  // the index exact, and the bound, which forgets in routing order, would only lose blocks.
  std::int64_t ApplyKvEvents(int replica, std::span<const KvEvent> events);
  // Another engine now stands at `replica`: nothing cached there, the capacity applies again.
  void ReplicaReplaced(int replica);

  const KvBlockIndex& index() const { return index_; }
  std::string_view policy_name() const { return policy_->name(); }
  // The block match of the last Route call, per replica.
  std::span<const std::int32_t> last_match() const { return matched_; }

 private:
  std::unique_ptr<RoutingPolicy> policy_;
  int block_tokens_;
  EngineProfile engine_;
  RoutingConfig config_;
  KvBlockIndex index_;
  std::vector<std::int32_t> matched_;
  std::vector<std::int64_t> cached_;
  std::vector<std::int32_t> candidates_;
};

}  // namespace tessera::serve
