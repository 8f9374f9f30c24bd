#include "server/service_signals.h"

#include <httplib.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/metrics_scrape.h"

namespace tessera {

namespace {

std::optional<std::string> Get(const std::string& base, const std::string& path, int timeout_ms) {
  httplib::Client c(base);
  c.set_connection_timeout(0, timeout_ms * 1000);
  c.set_read_timeout(0, timeout_ms * 1000);
  auto r = c.Get(path);
  if (!r || r->status != 200) return std::nullopt;
  return r->body;
}

}  // namespace

ReplicaSignal SignalReader::ReadReplica(const std::string& url) const {
  ReplicaSignal s;
  auto body = Get(url, "/metrics", timeout_ms_);
  if (!body) return s;
  s.answered = true;
  for (const ScrapedSample& m :
       ParseMetricsText(*body, {"vllm:num_requests_running", "vllm:num_requests_waiting",
                                "vllm:gpu_cache_usage_perc"})) {
    if (!std::isfinite(m.value)) continue;
    if (m.name == "vllm:num_requests_running") s.running += m.value;
    if (m.name == "vllm:num_requests_waiting") s.waiting += m.value;
    if (m.name == "vllm:gpu_cache_usage_perc") s.kv_usage = std::clamp(m.value, 0.0, 1.0);
  }
  return s;
}

void SignalReader::ReadGateway(std::map<std::string, ServiceSignals>& out) {
  if (gateway_.empty()) return;
  if (auto body = Get(gateway_, "/v1/services", timeout_ms_)) {
    const auto doc = nlohmann::json::parse(*body, nullptr, false);
    if (doc.is_object() && doc.contains("services") && doc["services"].is_array()) {
      for (const auto& svc : doc["services"]) {
        auto it = out.find(svc.value("name", ""));
        if (it == out.end()) continue;
        it->second.awaiting_replica = std::max(0, svc.value("awaitingReplica", 0));
        if (!svc.contains("replicas") || !svc["replicas"].is_array()) continue;
        for (const auto& r : svc["replicas"]) {
          auto rep = it->second.replicas.find(r.value("url", ""));
          if (rep == it->second.replicas.end()) continue;
          rep->second.gateway_in_flight = r.value("inFlight", 0.0);
          rep->second.gateway_waiting = r.value("waiting", 0.0);
        }
      }
    }
  }
  auto metrics = Get(gateway_, "/metrics", timeout_ms_);
  if (!metrics) return;
  std::map<std::string, std::vector<std::pair<double, double>>> now;
  for (const ScrapedSample& m :
       ParseMetricsText(*metrics, {"tessera_gateway_ttft_seconds_bucket"})) {
    auto service = m.labels.find("service");
    auto le = m.labels.find("le");
    if (service == m.labels.end() || le == m.labels.end()) continue;
    const double bound = le->second == "+Inf" ? INFINITY : std::atof(le->second.c_str());
    now[service->second].emplace_back(bound, m.value);
  }
  for (auto& [service, buckets] : now) {
    std::ranges::sort(buckets);
    if (auto it = out.find(service); it != out.end()) {
      auto last = last_ttft_.find(service);
      it->second.ttft_p90_ms =
          HistogramP90Ms(last == last_ttft_.end() ? decltype(buckets){} : last->second, buckets);
    }
    last_ttft_[service] = std::move(buckets);
  }
}

std::map<std::string, ServiceSignals> SignalReader::Read(
    const std::map<std::string, std::vector<std::string>>& services) {
  std::map<std::string, ServiceSignals> out;
  for (const auto& [name, urls] : services) {
    ServiceSignals& s = out[name];
    for (const std::string& url : urls) s.replicas[url] = ReadReplica(url);
  }
  ReadGateway(out);
  return out;
}

std::optional<double> HistogramP90Ms(const std::vector<std::pair<double, double>>& before,
                                     const std::vector<std::pair<double, double>>& now) {
  auto count_before = [&](double bound) {
    for (const auto& [b, n] : before)
      if (b == bound) return n;
    return 0.0;
  };
  if (now.empty()) return std::nullopt;
  const double total = now.back().second - count_before(now.back().first);
  if (!(total > 0)) return std::nullopt;
  double last_finite = 0;
  for (const auto& [bound, n] : now) {
    if (std::isfinite(bound)) last_finite = bound;
    if (n - count_before(bound) >= 0.9 * total)
      return 1000 * (std::isfinite(bound) ? bound : last_finite);
  }
  return 1000 * last_finite;
}

}  // namespace tessera
