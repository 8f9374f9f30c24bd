#include "serve/routed_load.h"

#include <algorithm>

namespace tessera::serve {

RoutedLoad::RoutedLoad(int replicas) : per_replica_(static_cast<std::size_t>(replicas)) {}

void RoutedLoad::Grow(int replicas) {
  if (replicas > this->replicas()) per_replica_.resize(static_cast<std::size_t>(replicas));
}

RoutedLoad::Ticket RoutedLoad::Routed(int replica, std::int64_t prompt_tokens,
                                      std::int64_t matched_tokens) {
  Ticket t{replica, prompt_tokens, prompt_tokens - std::min(prompt_tokens, matched_tokens)};
  Counts& c = per_replica_[static_cast<std::size_t>(replica)];
  ++c.waiting;
  c.queued_prefill_tokens += t.uncached_tokens;
  c.context_tokens += prompt_tokens;
  return t;
}

void RoutedLoad::FirstToken(const Ticket& t) {
  Counts& c = per_replica_[static_cast<std::size_t>(t.replica)];
  --c.waiting;
  ++c.running;
  c.queued_prefill_tokens -= t.uncached_tokens;
}

void RoutedLoad::Finished(const Ticket& t, bool first_token) {
  Counts& c = per_replica_[static_cast<std::size_t>(t.replica)];
  if (first_token) {
    --c.running;
  } else {
    --c.waiting;
    c.queued_prefill_tokens -= t.uncached_tokens;
  }
  c.context_tokens -= t.prompt_tokens;
}

void RoutedLoad::Clear(int replica) { per_replica_[static_cast<std::size_t>(replica)] = Counts{}; }

void RoutedLoad::Fill(std::span<ReplicaLoad> loads) const {
  const std::size_t n = std::min(loads.size(), per_replica_.size());
  for (std::size_t r = 0; r < n; ++r) {
    const Counts& c = per_replica_[r];
    loads[r].running = c.running;
    loads[r].waiting = c.waiting;
    loads[r].queued_prefill_tokens = c.queued_prefill_tokens;
    loads[r].context_tokens = c.context_tokens;
  }
}

std::int32_t RoutedLoad::waiting(int replica) const {
  return per_replica_[static_cast<std::size_t>(replica)].waiting;
}

std::int32_t RoutedLoad::in_flight(int replica) const {
  const Counts& c = per_replica_[static_cast<std::size_t>(replica)];
  return c.waiting + c.running;
}

}  // namespace tessera::serve
