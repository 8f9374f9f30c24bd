// What a router knows of one replica's load when it decides: the engine's own figures
// (vLLM's num_requests_running / num_requests_waiting / gpu_cache_usage_perc) and the prefill
// work queued on it.
#pragma once

#include <cstdint>

namespace tessera::serve {

struct ReplicaLoad {
  std::int32_t running = 0;  // admitted to the batch
  std::int32_t waiting = 0;  // queued for admission
  // Prompt tokens admitted or queued that are not yet prefilled (after their cache hits).
  std::int64_t queued_prefill_tokens = 0;
  std::int64_t context_tokens = 0;  // tokens of the running sequences (decode reads them)
  double kv_utilisation = 0;        // KV blocks held by requests / capacity, 0..1
  bool ready = true;                // false: out of rotation

  std::int32_t requests() const { return running + waiting; }
};

}  // namespace tessera::serve
