// What a router in front of its replicas knows of their load from the requests it sent them,
// as the gateway knows it: a request is waiting (its uncached prompt queued for prefill) from
// the moment it is routed until its first token comes back, then running until it ends. The
// gateway routes on this view; the simulator can route on it too (instead of the engines' own
// state), so both clocks decide from the same inputs. Not thread-safe; deterministic.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "serve/replica_load.h"

namespace tessera::serve {

class RoutedLoad {
 public:
  // One routed request, as RoutedLoad needs it back.
  struct Ticket {
    int replica = -1;
    std::int64_t prompt_tokens = 0;
    std::int64_t uncached_tokens = 0;  // prompt tokens the index did not place on the replica
  };

  // REQUIRES: replicas >= 0.
  explicit RoutedLoad(int replicas);
  int replicas() const { return static_cast<int>(per_replica_.size()); }
  // More replicas (never fewer); the new ones carry nothing.
  void Grow(int replicas);

  // REQUIRES: 0 <= replica < replicas(), 0 <= matched_tokens.
  Ticket Routed(int replica, std::int64_t prompt_tokens, std::int64_t matched_tokens);
  void FirstToken(const Ticket& t);
  // The request ended; `first_token`: FirstToken was called for it.
  void Finished(const Ticket& t, bool first_token);
  // The replica carries nothing (its slot now names another replica).
  void Clear(int replica);

  // Sets running, waiting, queued_prefill_tokens and context_tokens of loads[r] for every
  // replica r < min(loads.size(), replicas()); ready and kv_utilisation are left as they are
  // (the gateway learns no KV utilisation from its own requests).
  void Fill(std::span<ReplicaLoad> loads) const;
  std::int32_t waiting(int replica) const;
  std::int32_t in_flight(int replica) const;

 private:
  struct Counts {
    std::int32_t waiting = 0, running = 0;
    std::int64_t queued_prefill_tokens = 0, context_tokens = 0;
  };
  std::vector<Counts> per_replica_;
};

}  // namespace tessera::serve
