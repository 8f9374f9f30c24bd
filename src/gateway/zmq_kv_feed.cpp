#include "gateway/zmq_kv_feed.h"

#include <spdlog/spdlog.h>
#include <zmq.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstring>
#include <span>
#include <vector>

#include "gateway/vllm_kv_events.h"
#include "serve/engine_block_keys.h"

namespace tessera::gateway {

namespace {

// One context for every subscription (a context's I/O thread serves many sockets).
void* Context() {
  static void* ctx = zmq_ctx_new();
  return ctx;
}

// Receives one multipart message into `frames`; false when none came within the socket's
// receive timeout.
bool ReceiveMessage(void* socket, std::vector<std::string>* frames) {
  frames->clear();
  int more = 1;
  while (more) {
    zmq_msg_t part;
    zmq_msg_init(&part);
    if (zmq_msg_recv(&part, socket, 0) < 0) {
      zmq_msg_close(&part);
      return false;
    }
    frames->emplace_back(static_cast<const char*>(zmq_msg_data(&part)), zmq_msg_size(&part));
    more = zmq_msg_more(&part);
    zmq_msg_close(&part);
  }
  return true;
}

std::uint64_t BigEndian(const std::string& bytes) {
  std::uint64_t v = 0;
  for (unsigned char c : bytes) v = (v << 8) | c;
  return v;
}

bool StillInService(const ServiceRoutes& service, const std::string& url) {
  const auto replicas = service.Replicas();
  return std::any_of(replicas.begin(), replicas.end(),
                     [&](const ReplicaView& r) { return r.url == url; });
}

// Host and port of a base URL ("http://HOST:PORT", "[::1]" brackets kept).
std::optional<std::pair<std::string, int>> HostPort(const std::string& url) {
  std::string rest = url;
  if (auto at = rest.find("://"); at != std::string::npos) rest = rest.substr(at + 3);
  rest = rest.substr(0, rest.find('/'));
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || rest.back() == ']') return std::nullopt;
  int port = 0;
  const char* end = rest.data() + rest.size();
  auto [p, ec] = std::from_chars(rest.data() + colon + 1, end, port);
  if (ec != std::errc() || p != end) return std::nullopt;
  return std::pair{rest.substr(0, colon), port};
}

// One replica's stream: each message's batch decoded, re-keyed and applied to the index.
class ZmqKvFeed {
 public:
  ZmqKvFeed(ServiceRoutes& service, std::string url)
      : service_(service),
        url_(std::move(url)),
        keys_(service.block_tokens(),
              static_cast<std::size_t>(std::max<std::int64_t>(1, 2 * service.index_capacity()))) {}

  // frames: [topic, sequence, payload].
  void Apply(const std::vector<std::string>& frames) {
    const std::uint64_t seq = BigEndian(frames[1]);
    if (last_seq_ && seq != *last_seq_ + 1) {
      spdlog::warn("KV events of {}: batches {} to {} lost", url_, *last_seq_ + 1, seq - 1);
    }
    last_seq_ = seq;
    const std::string& payload = frames[2];
    auto batch = DecodeVllmKvEventBatch(std::as_bytes(std::span(payload.data(), payload.size())));
    if (!batch) {
      spdlog::warn("KV events of {}: batch {} skipped: {}", url_, seq, batch.error().message);
      return;
    }
    events_.clear();
    std::int64_t unmapped = 0;
    for (const serve::EngineKvEvent& e : *batch) unmapped += keys_.Translate(e, &events_);
    if (unmapped > 0) spdlog::debug("KV events of {}: {} blocks not keyed", url_, unmapped);
    const auto stored = std::count_if(events_.begin(), events_.end(), [](const serve::KvEvent& e) {
      return e.kind == serve::KvEvent::Kind::kStored;
    });
    const std::int64_t held = service_.ApplyKvEvents(url_, events_);
    const bool was_unknown = keys_.agreement() == serve::EngineBlockKeys::Agreement::kUnknown;
    const std::vector<serve::KvEvent> retract = keys_.Observe(stored, held);
    if (!retract.empty()) service_.ApplyKvEvents(url_, retract);
    if (was_unknown && keys_.agreement() == serve::EngineBlockKeys::Agreement::kDisagrees) {
      spdlog::warn(
          "KV events of {}: {}+ stored blocks, none of a prompt routed there: the engine's token "
          "ids are not the gateway's (docs/serving.md); only AllBlocksCleared is used from now",
          url_, serve::EngineBlockKeys::kAgreementWindow);
    }
  }

 private:
  ServiceRoutes& service_;
  std::string url_;
  serve::EngineBlockKeys keys_;
  std::vector<serve::KvEvent> events_;
  std::optional<std::uint64_t> last_seq_;
};

}  // namespace

Status AddKvEventEndpoint(const std::string& value, KvEventSources* sources) {
  const auto eq = value.find('=');
  if (eq == std::string::npos || eq == 0) {
    return InvalidArgument("--kv-events-endpoint: '" + value +
                           "' is not REPLICA_URL=tcp://HOST:PORT");
  }
  const std::string endpoint = value.substr(eq + 1);
  if (!endpoint.starts_with("tcp://") && !endpoint.starts_with("ipc://")) {
    return InvalidArgument("--kv-events-endpoint: '" + endpoint +
                           "' is not a tcp:// or ipc:// ZeroMQ endpoint");
  }
  sources->endpoints[value.substr(0, eq)] = endpoint;
  return {};
}

std::optional<std::string> ZmqEndpointFor(const KvEventSources& sources, const std::string& url) {
  if (auto it = sources.endpoints.find(url); it != sources.endpoints.end()) return it->second;
  if (sources.port_offset <= 0) return std::nullopt;
  auto hp = HostPort(url);
  if (!hp || hp->second + sources.port_offset > 65535) return std::nullopt;
  return "tcp://" + hp->first + ":" + std::to_string(hp->second + sources.port_offset);
}

void FollowZmqKvEvents(std::shared_ptr<ServiceRoutes> service, std::string url,
                       std::string endpoint, std::string topic,
                       std::shared_ptr<std::atomic<bool>> running,
                       std::shared_ptr<std::atomic<bool>> stop) {
  void* socket = zmq_socket(Context(), ZMQ_SUB);
  const int timeout_ms = 200, linger = 0;
  zmq_setsockopt(socket, ZMQ_RCVTIMEO, &timeout_ms, sizeof timeout_ms);
  zmq_setsockopt(socket, ZMQ_LINGER, &linger, sizeof linger);
  zmq_setsockopt(socket, ZMQ_SUBSCRIBE, topic.data(), topic.size());
  if (zmq_connect(socket, endpoint.c_str()) == 0) {
    spdlog::info("KV events of {}: subscribed to {} (vLLM's ZMQ format)", url, endpoint);
    ZmqKvFeed feed(*service, url);
    std::vector<std::string> frames;
    auto checked = std::chrono::steady_clock::now();
    while (!stop->load()) {
      if (std::chrono::steady_clock::now() - checked > std::chrono::seconds(1)) {
        if (!StillInService(*service, url)) break;
        checked = std::chrono::steady_clock::now();
      }
      if (ReceiveMessage(socket, &frames) && frames.size() >= 3) feed.Apply(frames);
    }
  } else {
    spdlog::warn("KV events of {}: cannot connect to {}: {}", url, endpoint,
                 zmq_strerror(zmq_errno()));
  }
  zmq_close(socket);
  running->store(false);
}

}  // namespace tessera::gateway
