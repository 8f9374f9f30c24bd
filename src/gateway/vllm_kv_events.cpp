#include "gateway/vllm_kv_events.h"

#include <msgpack.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace tessera::gateway {

namespace {

using Obj = msgpack_object;

std::string_view StrOf(const Obj& o) {
  return o.type == MSGPACK_OBJECT_STR ? std::string_view(o.via.str.ptr, o.via.str.size)
                                      : std::string_view();
}

bool IsNil(const Obj* o) { return o == nullptr || o->type == MSGPACK_OBJECT_NIL; }

// A block hash as llm-d and vLLM read it: an integer as its 64 bits, bytes by their last eight.
std::optional<std::uint64_t> HashOf(const Obj& o) {
  if (o.type == MSGPACK_OBJECT_POSITIVE_INTEGER) return o.via.u64;
  if (o.type == MSGPACK_OBJECT_NEGATIVE_INTEGER) return static_cast<std::uint64_t>(o.via.i64);
  if (o.type != MSGPACK_OBJECT_BIN || o.via.bin.size == 0) return std::nullopt;
  const auto* bytes = reinterpret_cast<const unsigned char*>(o.via.bin.ptr);
  const std::uint32_t from = o.via.bin.size > 8 ? o.via.bin.size - 8 : 0;
  std::uint64_t h = 0;
  for (std::uint32_t i = from; i < o.via.bin.size; ++i) h = (h << 8) | bytes[i];
  return h;
}

// An event's fields, by position (array layout) or by name (map layout).
struct Fields {
  std::string_view tag;
  const Obj* block_hashes = nullptr;
  const Obj* parent = nullptr;
  const Obj* token_ids = nullptr;
  const Obj* block_size = nullptr;
  const Obj* lora_id = nullptr;
  const Obj* medium = nullptr;
  const Obj* lora_name = nullptr;
};

const Obj* At(const msgpack_object_array& a, std::uint32_t i) {
  return i < a.size ? &a.ptr[i] : nullptr;
}

Result<Fields> FieldsOf(const Obj& e, const std::string& where) {
  Fields f;
  if (e.type == MSGPACK_OBJECT_ARRAY) {
    const msgpack_object_array& a = e.via.array;
    if (a.size == 0 || a.ptr[0].type != MSGPACK_OBJECT_STR)
      return InvalidArgument(where + ": a tagged event starts with its type name");
    f.tag = StrOf(a.ptr[0]);
    f.block_hashes = At(a, 1);
    if (f.tag == "BlockRemoved") {
      f.medium = At(a, 2);
    } else {
      f.parent = At(a, 2);
      f.token_ids = At(a, 3);
      f.block_size = At(a, 4);
      f.lora_id = At(a, 5);
      f.medium = At(a, 6);
      f.lora_name = At(a, 7);
    }
    return f;
  }
  if (e.type != MSGPACK_OBJECT_MAP) return InvalidArgument(where + ": not an array or a map");
  for (std::uint32_t i = 0; i < e.via.map.size; ++i) {
    const msgpack_object_kv& kv = e.via.map.ptr[i];
    const std::string_view key = StrOf(kv.key);
    if (key == "type") f.tag = StrOf(kv.val);
    if (key == "block_hashes") f.block_hashes = &kv.val;
    if (key == "parent_block_hash") f.parent = &kv.val;
    if (key == "token_ids") f.token_ids = &kv.val;
    if (key == "block_size") f.block_size = &kv.val;
    if (key == "lora_id") f.lora_id = &kv.val;
    if (key == "medium") f.medium = &kv.val;
    if (key == "lora_name") f.lora_name = &kv.val;
  }
  if (f.tag.empty()) return InvalidArgument(where + ": no \"type\"");
  return f;
}

Status ReadHashes(const Obj* o, const std::string& where, std::vector<std::uint64_t>* out) {
  if (o == nullptr || o->type != MSGPACK_OBJECT_ARRAY)
    return InvalidArgument(where + ".block_hashes: not an array");
  for (std::uint32_t i = 0; i < o->via.array.size; ++i) {
    auto h = HashOf(o->via.array.ptr[i]);
    if (!h) {
      return InvalidArgument(where + ".block_hashes[" + std::to_string(i) +
                             "]: not an integer or bytes");
    }
    out->push_back(*h);
  }
  return {};
}

bool OnGpu(const Obj* medium) {
  if (IsNil(medium)) return true;
  std::string m(StrOf(*medium));
  std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return std::toupper(c); });
  return m == "GPU";
}

Status ReadStored(const Fields& f, const std::string& where, serve::EngineKvEvent* e) {
  if (!IsNil(f.parent)) {
    e->parent_hash = HashOf(*f.parent);
    if (!e->parent_hash) return InvalidArgument(where + ".parent_block_hash: not a hash");
  }
  if (f.token_ids == nullptr || f.token_ids->type != MSGPACK_OBJECT_ARRAY)
    return InvalidArgument(where + ".token_ids: not an array");
  for (std::uint32_t i = 0; i < f.token_ids->via.array.size; ++i) {
    const Obj& t = f.token_ids->via.array.ptr[i];
    if (t.type != MSGPACK_OBJECT_POSITIVE_INTEGER || t.via.u64 > 0x7fffffff) {
      return InvalidArgument(where + ".token_ids[" + std::to_string(i) +
                             "]: not a token id (0 to 2^31-1)");
    }
    e->token_ids.push_back(static_cast<std::int32_t>(t.via.u64));
  }
  if (f.block_size == nullptr || f.block_size->type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
      f.block_size->via.u64 == 0 || f.block_size->via.u64 > (1u << 20)) {
    return InvalidArgument(where + ".block_size: not a positive integer");
  }
  e->block_size = static_cast<std::int32_t>(f.block_size->via.u64);
  e->adapter = !IsNil(f.lora_id) || !IsNil(f.lora_name);
  return {};
}

Result<std::vector<serve::EngineKvEvent>> DecodeEvents(const Obj& events) {
  std::vector<serve::EngineKvEvent> out;
  for (std::uint32_t i = 0; i < events.via.array.size; ++i) {
    const std::string where = "events[" + std::to_string(i) + "]";
    auto f = FieldsOf(events.via.array.ptr[i], where);
    if (!f) return std::unexpected(f.error());
    serve::EngineKvEvent e;
    if (f->tag == "AllBlocksCleared") {
      e.kind = serve::EngineKvEvent::Kind::kCleared;
    } else if (f->tag == "BlockStored" || f->tag == "BlockRemoved") {
      e.kind = f->tag == "BlockStored" ? serve::EngineKvEvent::Kind::kStored
                                       : serve::EngineKvEvent::Kind::kRemoved;
      if (auto s = ReadHashes(f->block_hashes, where, &e.block_hashes); !s)
        return std::unexpected(s.error());
      e.gpu_tier = OnGpu(f->medium);
      if (e.kind == serve::EngineKvEvent::Kind::kStored) {
        if (auto s = ReadStored(*f, where, &e); !s) return std::unexpected(s.error());
      }
    } else {
      continue;  // a newer event type: not ours to guess
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

Result<std::vector<serve::EngineKvEvent>> DecodeVllmKvEventBatch(
    std::span<const std::byte> payload) {
  msgpack_unpacked unpacked;
  msgpack_unpacked_init(&unpacked);
  const std::unique_ptr<msgpack_unpacked, void (*)(msgpack_unpacked*)> guard(
      &unpacked, msgpack_unpacked_destroy);
  std::size_t offset = 0;
  if (msgpack_unpack_next(&unpacked, reinterpret_cast<const char*>(payload.data()), payload.size(),
                          &offset) != MSGPACK_UNPACK_SUCCESS) {
    return InvalidArgument("KV event batch: not one whole msgpack value");
  }
  const Obj& batch = unpacked.data;
  const Obj* events = nullptr;
  if (batch.type == MSGPACK_OBJECT_ARRAY && batch.via.array.size >= 2) {
    events = &batch.via.array.ptr[1];
  } else if (batch.type == MSGPACK_OBJECT_MAP) {
    for (std::uint32_t i = 0; i < batch.via.map.size; ++i) {
      if (StrOf(batch.via.map.ptr[i].key) == "events") events = &batch.via.map.ptr[i].val;
    }
  }
  if (events == nullptr || events->type != MSGPACK_OBJECT_ARRAY)
    return InvalidArgument("KV event batch: no events array ([ts, events, ...])");
  return DecodeEvents(*events);
}

}  // namespace tessera::gateway
