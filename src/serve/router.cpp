#include "serve/router.h"

#include <algorithm>
#include <utility>

namespace tessera::serve {

std::int64_t IndexCapacityFor(const EngineProfile& engine, int block_tokens) {
  return std::max<std::int64_t>(1, engine.kv_cache_tokens / std::max(1, block_tokens));
}

Router::Router(std::unique_ptr<RoutingPolicy> policy, int replicas, int block_tokens,
               EngineProfile engine, RoutingConfig config, std::int64_t index_capacity_per_replica)
    : policy_(std::move(policy)),
      block_tokens_(block_tokens),
      engine_(std::move(engine)),
      config_(config),
      index_(replicas, index_capacity_per_replica),
      cached_(static_cast<std::size_t>(replicas)) {}

RouteDecision Router::Route(const RouteRequest& request, std::span<const ReplicaLoad> loads) {
  candidates_.clear();
  for (std::size_t r = 0; r < loads.size(); ++r) {
    if (loads[r].ready) candidates_.push_back(static_cast<std::int32_t>(r));
  }
  if (candidates_.empty()) return RouteDecision{-1, RejectReason::kNoReadyReplica};
  index_.MatchPrefix(request.blocks, &matched_);
  for (std::size_t r = 0; r < cached_.size(); ++r) {
    cached_[r] = index_.blocks_on(static_cast<int>(r));
  }
  const RouteContext ctx{loads, matched_, cached_, candidates_, block_tokens_, &engine_, &config_};
  RouteDecision d = policy_->Route(request, ctx);
  if (d.replica >= 0) index_.Stored(d.replica, request.blocks);
  return d;
}

std::int64_t Router::ApplyKvEvents(int replica, std::span<const KvEvent> events) {
  std::int64_t already_held = 0;
  for (const KvEvent& e : events) {
    switch (e.kind) {
      case KvEvent::Kind::kStored:
        already_held += index_.Stored(replica, std::span(&e.block, 1));
        break;
      case KvEvent::Kind::kRemoved:
        index_.Removed(replica, std::span(&e.block, 1));
        break;
      case KvEvent::Kind::kCleared:
        index_.Cleared(replica);
        break;
    }
  }
  // Its events name blocks routed there: they keep the index exact from now on.
  if (already_held > 0) index_.SetBounded(replica, false);
  return already_held;
}

void Router::ReplicaReplaced(int replica) {
  index_.Cleared(replica);
  index_.SetBounded(replica, true);
}

}  // namespace tessera::serve
