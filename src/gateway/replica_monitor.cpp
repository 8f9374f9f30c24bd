#include "gateway/replica_monitor.h"

#include <httplib.h>

#include <chrono>
#include <nlohmann/json.hpp>

namespace tessera::gateway {

namespace {

using Json = nlohmann::json;

void FollowKvEvents(std::shared_ptr<ServiceRoutes> service, std::string url,
                    std::shared_ptr<std::atomic<bool>> running,
                    std::shared_ptr<std::atomic<bool>> stop,
                    std::shared_ptr<std::atomic<bool>> unsupported) {
  httplib::Client client(url);
  client.set_connection_timeout(1, 0);
  client.set_read_timeout(5, 0);  // the engine sends a keepalive every second
  std::string carry;
  int status = 0;
  client.Get(
      "/v1/kv_events",
      [&](const httplib::Response& r) {
        status = r.status;
        return r.status == 200;
      },
      [&](const char* data, std::size_t n) {
        if (stop->load()) return false;
        carry.append(data, n);
        std::size_t end;
        while ((end = carry.find("\n\n")) != std::string::npos) {
          std::string_view event(carry.data(), end);
          if (event.starts_with("data: ")) {
            auto events = ParseKvEventMessage(event.substr(6));
            if (!events.empty()) service->ApplyKvEvents(url, events);
          }
          carry.erase(0, end + 2);
        }
        return true;
      });
  if (status == 404) unsupported->store(true);
  running->store(false);
}

}  // namespace

std::vector<serve::KvEvent> ParseKvEventMessage(std::string_view json) {
  std::vector<serve::KvEvent> out;
  Json doc = Json::parse(json, nullptr, false);
  if (!doc.is_object() || !doc.contains("events") || !doc["events"].is_array()) return out;
  for (const Json& e : doc["events"]) {
    if (!e.is_object() || !e.contains("type") || !e["type"].is_string()) continue;
    const std::string type = e["type"].get<std::string>();
    if (type == "AllBlocksCleared") {
      out.push_back({serve::KvEvent::Kind::kCleared, 0});
      continue;
    }
    serve::KvEvent::Kind kind;
    if (type == "BlockStored") {
      kind = serve::KvEvent::Kind::kStored;
    } else if (type == "BlockRemoved") {
      kind = serve::KvEvent::Kind::kRemoved;
    } else {
      continue;
    }
    auto hashes = e.find("block_hashes");
    if (hashes == e.end() || !hashes->is_array()) continue;
    for (const Json& h : *hashes) {
      if (h.is_number_unsigned() || h.is_number_integer()) {
        out.push_back({kind, h.get<serve::BlockHash>()});
      }
    }
  }
  return out;
}

ReplicaMonitor::ReplicaMonitor(ServiceRegistry& registry, int interval_ms, bool kv_events,
                               KvEventSources zmq_sources)
    : registry_(registry),
      interval_ms_(interval_ms),
      kv_events_(kv_events),
      zmq_sources_(std::move(zmq_sources)) {
  thread_ = std::thread([this] { Loop(); });
}

ReplicaMonitor::~ReplicaMonitor() {
  stop_->store(true);
  if (thread_.joinable()) thread_.join();
}

void ReplicaMonitor::Loop() {
  while (!stop_->load()) {
    ProbeOnce();
    for (int waited = 0; waited < interval_ms_ && !stop_->load(); waited += 50) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

void ReplicaMonitor::ProbeOnce() {
  for (const auto& service : registry_.All()) {
    for (const ReplicaView& r : service->Replicas()) {
      httplib::Client client(r.url);
      client.set_connection_timeout(1, 0);
      client.set_read_timeout(2, 0);
      auto res = client.Get("/health");
      if (res && res->status == 200) {
        service->MarkHealthy(r.url);
        if (kv_events_) EnsureFeed(service, r.url);
      } else {
        service->ProbeFailed(r.url,
                             res ? "health check answered " + std::to_string(res->status)
                                 : "health check failed: " + httplib::to_string(res.error()));
      }
    }
  }
}

void ReplicaMonitor::EnsureFeed(const std::shared_ptr<ServiceRoutes>& service,
                                const std::string& url) {
  std::lock_guard lock(mu_);
  Feed& feed = feeds_[service->config().name + " " + url];
  if (feed.unsupported->load() || feed.running->load()) return;
  feed.running->store(true);
  // Detached, holding only shared state: it ends within a keepalive (SSE) or a receive timeout
  // (ZMQ) of stop_ being set.
  if (auto endpoint = ZmqEndpointFor(zmq_sources_, url)) {
    std::thread(FollowZmqKvEvents, service, url, *endpoint, zmq_sources_.topic, feed.running, stop_)
        .detach();
    return;
  }
  std::thread(FollowKvEvents, service, url, feed.running, stop_, feed.unsupported).detach();
}

}  // namespace tessera::gateway
