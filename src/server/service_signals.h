// What the autoscaler reads of a service's replicas, outside the controller's lock: each
// replica's own /metrics (the engine's vLLM-style gauges: requests running and waiting, KV-cache
// usage) and, when the controller knows the gateway (`tesserad --gateway URL`), the gateway's
// GET /v1/services (its requests in flight and waiting per replica URL) and /metrics (its TTFT
// histogram per service, whose p90 over the interval since the last read is the ttft-p90
// signal). A replica that does not answer within the timeout is left out of the sample.
//
// Thread-safety: one SignalReader per loop; not shared.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tessera {

struct ReplicaSignal {
  bool answered = false;  // its /metrics answered
  double running = 0;     // vllm:num_requests_running
  double waiting = 0;     // vllm:num_requests_waiting
  double kv_usage = 0;    // vllm:gpu_cache_usage_perc, 0..1
  // The gateway's view of the replica (requests it sent and that have not ended; those of them
  // without a first token yet); nullopt without a gateway or when it does not list the URL.
  std::optional<double> gateway_in_flight;
  std::optional<double> gateway_waiting;
};

struct ServiceSignals {
  std::map<std::string, ReplicaSignal> replicas;  // by base URL
  int awaiting_replica = 0;           // requests the gateway holds for want of a ready replica
  std::optional<double> ttft_p90_ms;  // since the last read; none: no request ended
};

class SignalReader {
 public:
  SignalReader(std::string gateway_url, int timeout_ms)
      : gateway_(std::move(gateway_url)), timeout_ms_(timeout_ms) {}

  // `services`: service name ("queue/name") -> its replicas' base URLs.
  std::map<std::string, ServiceSignals> Read(
      const std::map<std::string, std::vector<std::string>>& services);

 private:
  ReplicaSignal ReadReplica(const std::string& url) const;
  void ReadGateway(std::map<std::string, ServiceSignals>& out);

  std::string gateway_;
  int timeout_ms_;
  // The gateway's TTFT histogram per service at the last read: (upper bound, count) pairs.
  std::map<std::string, std::vector<std::pair<double, double>>> last_ttft_;
};

// The p90 in ms of the observations between two reads of a cumulative histogram (buckets as
// (upper bound in seconds, cumulative count), ascending; +Inf last): the bound of the first
// bucket holding the 90th percentile. nullopt when nothing was observed between them.
std::optional<double> HistogramP90Ms(const std::vector<std::pair<double, double>>& before,
                                     const std::vector<std::pair<double, double>>& now);

}  // namespace tessera
