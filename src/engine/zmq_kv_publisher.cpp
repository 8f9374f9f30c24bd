#include "engine/zmq_kv_publisher.h"

#include <msgpack.h>
#include <zmq.h>

#include <string_view>

namespace tessera::engine {

namespace {

void PackString(msgpack_packer* pk, std::string_view s) {
  msgpack_pack_str(pk, s.size());
  msgpack_pack_str_body(pk, s.data(), s.size());
}

void PackHashes(msgpack_packer* pk, const std::vector<std::uint64_t>& hashes) {
  msgpack_pack_array(pk, hashes.size());
  for (std::uint64_t h : hashes) msgpack_pack_uint64(pk, h);
}

void PackEvent(msgpack_packer* pk, const serve::EngineKvEvent& e) {
  switch (e.kind) {
    case serve::EngineKvEvent::Kind::kCleared:
      msgpack_pack_array(pk, 1);
      PackString(pk, "AllBlocksCleared");
      return;
    case serve::EngineKvEvent::Kind::kRemoved:
      msgpack_pack_array(pk, 3);
      PackString(pk, "BlockRemoved");
      PackHashes(pk, e.block_hashes);
      PackString(pk, "GPU");
      return;
    case serve::EngineKvEvent::Kind::kStored:
      msgpack_pack_array(pk, 7);
      PackString(pk, "BlockStored");
      PackHashes(pk, e.block_hashes);
      if (e.parent_hash) {
        msgpack_pack_uint64(pk, *e.parent_hash);
      } else {
        msgpack_pack_nil(pk);
      }
      msgpack_pack_array(pk, e.token_ids.size());
      for (std::int32_t t : e.token_ids) msgpack_pack_int32(pk, t);
      msgpack_pack_int32(pk, e.block_size);
      msgpack_pack_nil(pk);  // lora_id
      PackString(pk, "GPU");
      return;
  }
}

}  // namespace

std::uint64_t EngineHash(std::uint64_t block) {
  std::uint64_t z = block ^ 0x5DEECE66DULL;  // any fixed salt: what matters is that it differs
  z = (z ^ (z >> 33)) * 0xFF51AFD7ED558CCDULL;
  z = (z ^ (z >> 33)) * 0xC4CEB9FE1A85EC53ULL;
  return z ^ (z >> 33);
}

std::string EncodeKvEventBatch(double ts, const std::vector<serve::EngineKvEvent>& events) {
  msgpack_sbuffer buf;
  msgpack_sbuffer_init(&buf);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &buf, msgpack_sbuffer_write);
  msgpack_pack_array(&pk, 2);
  msgpack_pack_double(&pk, ts);
  msgpack_pack_array(&pk, events.size());
  for (const serve::EngineKvEvent& e : events) PackEvent(&pk, e);
  std::string out(buf.data, buf.size);
  msgpack_sbuffer_destroy(&buf);
  return out;
}

Result<std::unique_ptr<ZmqKvPublisher>> ZmqKvPublisher::Bind(const std::string& endpoint,
                                                             std::string topic) {
  void* context = zmq_ctx_new();
  void* socket = zmq_socket(context, ZMQ_PUB);
  const int hwm = 100'000, linger = 0;  // vLLM's default high-water mark
  zmq_setsockopt(socket, ZMQ_SNDHWM, &hwm, sizeof hwm);
  zmq_setsockopt(socket, ZMQ_LINGER, &linger, sizeof linger);
  if (zmq_bind(socket, endpoint.c_str()) != 0) {
    const std::string why = zmq_strerror(zmq_errno());
    zmq_close(socket);
    zmq_ctx_term(context);
    return InvalidArgument("--kv-events-endpoint: cannot bind " + endpoint + ": " + why);
  }
  return std::unique_ptr<ZmqKvPublisher>(new ZmqKvPublisher(context, socket, std::move(topic)));
}

ZmqKvPublisher::ZmqKvPublisher(void* context, void* socket, std::string topic)
    : context_(context), socket_(socket), topic_(std::move(topic)) {}

ZmqKvPublisher::~ZmqKvPublisher() {
  zmq_close(socket_);
  zmq_ctx_term(context_);
}

void ZmqKvPublisher::Publish(double ts, const std::vector<serve::EngineKvEvent>& events) {
  const std::string payload = EncodeKvEventBatch(ts, events);
  unsigned char seq[8];
  for (int i = 0; i < 8; ++i) seq[i] = static_cast<unsigned char>(seq_ >> (56 - 8 * i));
  ++seq_;
  zmq_send(socket_, topic_.data(), topic_.size(), ZMQ_SNDMORE | ZMQ_DONTWAIT);
  zmq_send(socket_, seq, sizeof seq, ZMQ_SNDMORE | ZMQ_DONTWAIT);
  zmq_send(socket_, payload.data(), payload.size(), ZMQ_DONTWAIT);
}

}  // namespace tessera::engine
