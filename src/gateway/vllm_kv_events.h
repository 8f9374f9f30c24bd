// vLLM's KV event wire format, decoded: the payload (third frame) of a message on the engine's
// ZMQ PUB socket, a msgpack KVEventBatch (vllm/distributed/kv_events.py, --kv-events-config).
// A batch is [ts, events, data_parallel_rank?] and each event a tagged union,
// ["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium, ...],
// ["BlockRemoved", block_hashes, medium?] or ["AllBlocksCleared"]; newer vLLM releases may
// encode the batch and its events as maps ({"type": "BlockStored", "block_hashes": ...}), and
// both layouts are read. A block hash is an integer (Python's hash(), possibly negative) or
// bytes (SHA-256: its last 8 bytes read big-endian, as llm-d and vLLM's own conversion do).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "core/status.h"
#include "serve/engine_block_keys.h"

namespace tessera::gateway {

// Errors name the part of the batch that is malformed; unknown event tags are skipped.
Result<std::vector<serve::EngineKvEvent>> DecodeVllmKvEventBatch(
    std::span<const std::byte> payload);

}  // namespace tessera::gateway
