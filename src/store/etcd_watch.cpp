#include "store/etcd_watch.h"

#include <httplib.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "store/etcd_client.h"

namespace tessera {

namespace {

using Json = nlohmann::json;

}  // namespace

int WatchEventCount(std::string_view message) {
  const Json doc = Json::parse(message, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("result") || !doc["result"].is_object()) return -1;
  const Json& result = doc["result"];
  if (result.value("canceled", false)) return -1;
  auto events = result.find("events");
  return events != result.end() && events->is_array() ? static_cast<int>(events->size()) : 0;
}

EtcdKeyWatch::EtcdKeyWatch(std::vector<std::string> endpoints, EtcdTls tls, std::string key,
                           std::function<void()> on_change, int idle_timeout_ms)
    : endpoints_(std::move(endpoints)),
      tls_(std::move(tls)),
      key_(std::move(key)),
      on_change_(std::move(on_change)),
      idle_timeout_ms_(idle_timeout_ms) {
  thread_ = std::thread([this] { Loop(); });
}

EtcdKeyWatch::~EtcdKeyWatch() {
  stop_ = true;
  {
    std::lock_guard lock(client_mu_);
    if (client_ != nullptr) client_->stop();  // ends the blocking read of the stream
  }
  thread_.join();
}

void EtcdKeyWatch::Loop() {
  for (std::size_t i = 0; !stop_ && !endpoints_.empty(); i = (i + 1) % endpoints_.size()) {
    Stream(i);
    // A member that refuses at once is not retried in a busy loop.
    for (int waited = 0; waited < 100 && !stop_; waited += 20)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void EtcdKeyWatch::Stream(std::size_t i) {
  auto stream_client = EtcdHttpClient(endpoints_[i], tls_);
  httplib::Client& client = *stream_client;
  client.set_connection_timeout(0, 500'000);
  client.set_read_timeout(idle_timeout_ms_ / 1000, (idle_timeout_ms_ % 1000) * 1000);
  {
    std::lock_guard lock(client_mu_);
    if (stop_) return;
    client_ = &client;
  }
  httplib::Request req;
  req.method = "POST";
  req.path = "/v3/watch";
  req.set_header("Content-Type", "application/json");
  req.body = Json{{"create_request", {{"key", Base64Encode(key_)}}}}.dump();
  std::string pending;  // the stream's bytes not yet split into messages
  bool created = false;
  req.content_receiver = [&](const char* data, std::size_t n, std::uint64_t, std::uint64_t) {
    pending.append(data, n);
    for (auto nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n')) {
      const int events = WatchEventCount(std::string_view(pending).substr(0, nl));
      pending.erase(0, nl + 1);
      if (events < 0) return false;  // cancelled (e.g. compacted): open another
      if (!created) {
        created = true;
        ++opened_;
        on_change_();  // what changed while no stream was open
      } else if (events > 0) {
        on_change_();
      }
    }
    return !stop_.load();
  };
  (void)client.send(req);
  std::lock_guard lock(client_mu_);
  client_ = nullptr;
}

}  // namespace tessera
