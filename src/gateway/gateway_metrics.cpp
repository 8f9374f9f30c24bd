#include "gateway/gateway_metrics.h"

#include <sstream>

namespace tessera::gateway {

void GatewayMetrics::Request(const std::string& service, int code) {
  std::lock_guard lock(mu_);
  ++requests_[{service, code}];
}

void GatewayMetrics::Decision(const std::string& service, const std::string& policy,
                              const std::string& outcome) {
  std::lock_guard lock(mu_);
  ++decisions_[{service, policy, outcome}];
}

void GatewayMetrics::Ttft(const std::string& service, double seconds) {
  std::lock_guard lock(mu_);
  Histogram& h = services_[service].ttft;
  for (std::size_t i = 0; i < kTtftBuckets.size(); ++i) {
    if (seconds <= kTtftBuckets[i]) ++h.buckets[i];
  }
  ++h.count;
  h.sum += seconds;
}

void GatewayMetrics::Tokens(const std::string& service, std::int64_t prompt, std::int64_t matched) {
  std::lock_guard lock(mu_);
  PerService& s = services_[service];
  s.prompt_tokens += prompt;
  s.matched_tokens += matched;
}

void GatewayMetrics::Retry(const std::string& service) {
  std::lock_guard lock(mu_);
  ++services_[service].retries;
}

void GatewayMetrics::StreamFailed(const std::string& service) {
  std::lock_guard lock(mu_);
  ++services_[service].streams_failed;
}

std::string GatewayMetrics::Text(const std::string& extra) const {
  std::lock_guard lock(mu_);
  std::ostringstream o;
  o << "# HELP tessera_gateway_requests_total Requests answered, by service and HTTP code.\n"
       "# TYPE tessera_gateway_requests_total counter\n";
  for (const auto& [k, n] : requests_) {
    o << "tessera_gateway_requests_total{service=\"" << k.first << "\",code=\"" << k.second
      << "\"} " << n << '\n';
  }
  o << "# HELP tessera_gateway_routing_decisions_total Routing decisions by policy and outcome.\n"
       "# TYPE tessera_gateway_routing_decisions_total counter\n";
  for (const auto& [k, n] : decisions_) {
    o << "tessera_gateway_routing_decisions_total{service=\"" << std::get<0>(k) << "\",policy=\""
      << std::get<1>(k) << "\",outcome=\"" << std::get<2>(k) << "\"} " << n << '\n';
  }
  o << "# HELP tessera_gateway_ttft_seconds Request arrival to first token out of the gateway.\n"
       "# TYPE tessera_gateway_ttft_seconds histogram\n";
  for (const auto& [name, s] : services_) {
    for (std::size_t i = 0; i < kTtftBuckets.size(); ++i) {
      o << "tessera_gateway_ttft_seconds_bucket{service=\"" << name << "\",le=\"" << kTtftBuckets[i]
        << "\"} " << s.ttft.buckets[i] << '\n';
    }
    o << "tessera_gateway_ttft_seconds_bucket{service=\"" << name << "\",le=\"+Inf\"} "
      << s.ttft.count << '\n'
      << "tessera_gateway_ttft_seconds_sum{service=\"" << name << "\"} " << s.ttft.sum << '\n'
      << "tessera_gateway_ttft_seconds_count{service=\"" << name << "\"} " << s.ttft.count << '\n';
  }
  auto per_service = [&](const char* name, const char* type, const char* help, auto field) {
    o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
    for (const auto& [service, s] : services_) {
      o << name << "{service=\"" << service << "\"} " << field(s) << '\n';
    }
  };
  per_service("tessera_gateway_prompt_tokens_total", "counter", "Prompt tokens routed.",
              [](const PerService& s) { return s.prompt_tokens; });
  per_service("tessera_gateway_prefix_matched_tokens_total", "counter",
              "Prompt tokens the chosen replica held, by the router's block index.",
              [](const PerService& s) { return s.matched_tokens; });
  per_service("tessera_gateway_prefix_hit_rate", "gauge",
              "Matched prompt tokens / prompt tokens routed.", [](const PerService& s) {
                return s.prompt_tokens > 0 ? static_cast<double>(s.matched_tokens) /
                                                 static_cast<double>(s.prompt_tokens)
                                           : 0.0;
              });
  per_service("tessera_gateway_retries_total", "counter",
              "Requests sent to another replica after one failed before the first token.",
              [](const PerService& s) { return s.retries; });
  per_service("tessera_gateway_streams_failed_total", "counter",
              "Streams ended with an error event because their replica failed mid-stream.",
              [](const PerService& s) { return s.streams_failed; });
  o << extra;
  return o.str();
}

}  // namespace tessera::gateway
