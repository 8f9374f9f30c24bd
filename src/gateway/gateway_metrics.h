// The gateway's own Prometheus metrics, all prefixed tessera_gateway_: requests by service and
// HTTP code, time to first token (histogram), routing decisions by service, policy and outcome,
// retries, streams cut by a failed replica, and the prefix hit rate the router predicted
// (prompt tokens its index says the chosen replica holds / prompt tokens). Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "core/metrics_text.h"

namespace tessera::gateway {

class GatewayMetrics {
 public:
  void Request(const std::string& service, int code);
  void Decision(const std::string& service, const std::string& policy, const std::string& outcome);
  void Ttft(const std::string& service, double seconds);
  void Tokens(const std::string& service, std::int64_t prompt, std::int64_t matched);
  void Retry(const std::string& service);
  void StreamFailed(const std::string& service);
  // Its families, in the Prometheus text format (the replica gauges are the proxy's).
  void Write(MetricsWriter& out) const;

 private:
  static constexpr double kTtftBuckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                            0.5,   1,    2.5,   5,    10,  30};
  struct PerService {
    std::int64_t prompt_tokens = 0, matched_tokens = 0, retries = 0, streams_failed = 0;
    Histogram ttft{kTtftBuckets};
  };
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, std::int64_t> requests_;
  std::map<std::tuple<std::string, std::string, std::string>, std::int64_t> decisions_;
  std::map<std::string, PerService> services_;
};

}  // namespace tessera::gateway
