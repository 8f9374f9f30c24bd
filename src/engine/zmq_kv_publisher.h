// The simulated engine's KV events in vLLM's wire format (vllm/distributed/kv_events.py's
// ZmqEventPublisher, --kv-events-config '{"publisher": "zmq", ...}'), so whatever consumes a
// real vLLM's events (tessera-gateway --kv-events-endpoint, llm-d's indexer, Dynamo) consumes
// these: a ZMQ PUB socket bound to the endpoint, one message per engine step with events,
// [topic, sequence (8 bytes, big endian), msgpack KVEventBatch], the batch and its events in
// vLLM's array layout ([ts, events]; ["BlockStored", block_hashes, parent_block_hash,
// token_ids, block_size, lora_id, medium], ["BlockRemoved", block_hashes, medium],
// ["AllBlocksCleared"]). Like vLLM, it names blocks by hashes of its own (engine_hash below),
// not the ones a router computes; the token ids in BlockStored are what lets a router key them.
// Not thread-safe: the engine's scheduling thread publishes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "serve/engine_block_keys.h"

namespace tessera::engine {

class ZmqKvPublisher {
 public:
  // Errors: the endpoint cannot be bound (it names it and why).
  static Result<std::unique_ptr<ZmqKvPublisher>> Bind(const std::string& endpoint,
                                                      std::string topic);
  ~ZmqKvPublisher();
  ZmqKvPublisher(const ZmqKvPublisher&) = delete;
  ZmqKvPublisher& operator=(const ZmqKvPublisher&) = delete;

  // Sends one batch stamped `ts` (seconds since the epoch); never blocks (a subscriber too slow
  // for the socket's high-water mark loses messages, as with vLLM).
  void Publish(double ts, const std::vector<serve::EngineKvEvent>& events);
  std::uint64_t sent() const { return seq_; }

 private:
  ZmqKvPublisher(void* context, void* socket, std::string topic);
  void* context_;
  void* socket_;
  std::string topic_;
  std::uint64_t seq_ = 0;
};

// The engine's own name for a block (a fixed permutation of the chained hash, so it is a chain
// too, but not the value a router computes from the same tokens).
std::uint64_t EngineHash(std::uint64_t block);

// The msgpack KVEventBatch of `events` (the publisher's payload; exposed for tests).
std::string EncodeKvEventBatch(double ts, const std::vector<serve::EngineKvEvent>& events);

}  // namespace tessera::engine
