#include "gateway/gateway_metrics.h"

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
  services_[service].ttft.Observe(seconds);
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

void GatewayMetrics::Write(MetricsWriter& out) const {
  std::lock_guard lock(mu_);
  out.Family("tessera_gateway_requests_total", MetricType::kCounter,
             "Requests answered, by service and HTTP code.");
  for (const auto& [k, n] : requests_) {
    out.Sample({{"service", k.first}, {"code", std::to_string(k.second)}}, static_cast<double>(n));
  }
  out.Family("tessera_gateway_routing_decisions_total", MetricType::kCounter,
             "Routing decisions by policy and outcome.");
  for (const auto& [k, n] : decisions_) {
    out.Sample(
        {{"service", std::get<0>(k)}, {"policy", std::get<1>(k)}, {"outcome", std::get<2>(k)}},
        static_cast<double>(n));
  }
  out.Family("tessera_gateway_ttft_seconds", MetricType::kHistogram,
             "Request arrival to first token out of the gateway.");
  for (const auto& [name, s] : services_) out.Sample({{"service", name}}, s.ttft);
  auto per_service = [&](const char* name, MetricType type, const char* help, auto field) {
    out.Family(name, type, help);
    for (const auto& [service, s] : services_) out.Sample({{"service", service}}, field(s));
  };
  auto count = [](std::int64_t v) { return static_cast<double>(v); };
  per_service("tessera_gateway_prompt_tokens_total", MetricType::kCounter, "Prompt tokens routed.",
              [&](const PerService& s) { return count(s.prompt_tokens); });
  per_service("tessera_gateway_prefix_matched_tokens_total", MetricType::kCounter,
              "Prompt tokens the chosen replica held, by the router's block index.",
              [&](const PerService& s) { return count(s.matched_tokens); });
  per_service("tessera_gateway_prefix_hit_ratio", MetricType::kGauge,
              "Matched prompt tokens / prompt tokens routed.", [](const PerService& s) {
                return s.prompt_tokens > 0 ? static_cast<double>(s.matched_tokens) /
                                                 static_cast<double>(s.prompt_tokens)
                                           : 0.0;
              });
  per_service("tessera_gateway_retries_total", MetricType::kCounter,
              "Requests sent to another replica after one failed before the first token.",
              [&](const PerService& s) { return count(s.retries); });
  per_service("tessera_gateway_streams_failed_total", MetricType::kCounter,
              "Streams ended with an error event because their replica failed mid-stream.",
              [&](const PerService& s) { return count(s.streams_failed); });
}

}  // namespace tessera::gateway
