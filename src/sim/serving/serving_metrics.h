// What the serving experiment measures, as an observer of the simulation: each request's
// arrival, rejection, admission (cache hits) and tokens; and the replicas' running requests
// after each instant (load imbalance). Definitions: DESIGN.md's shared serving figures.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "serve/engine_model.h"
#include "sim/serving/serving_experiment.h"

namespace tessera {

class ServingMetrics {
 public:
  // The first `warmup` requests are left out of the figures (ServingOptions::warmup_requests),
  // and so is the load before measure_from_us (the first measured arrival).
  ServingMetrics(std::size_t requests, double slo_ttft_ms, double slo_tbt_ms,
                 std::size_t warmup = 0, std::int64_t measure_from_us = 0);

  void Arrived(std::size_t request, std::int64_t now_us, std::int64_t prompt_tokens);
  void Rejected(std::size_t request, const std::string& reason);
  void Admitted(std::size_t request, const serve::Admission& a);
  void Token(std::size_t request, std::int64_t now_us, bool last);
  // After each instant: the running requests per replica from now on.
  void Sample(std::int64_t now_us, const std::vector<std::int32_t>& running);

  // Fills the run's figures; `duration_us` is the span goodput is taken over.
  void Finish(std::int64_t duration_us, ServingRun* run) const;

 private:
  struct PerRequest {
    std::int64_t arrival = 0, first = -1, last_token = -1, tokens = 0;
    std::int64_t prompt = 0, hit = 0, host_hit = 0;
    bool rejected = false, done = false;
  };
  std::vector<PerRequest> requests_;
  std::vector<double> gaps_ms_;
  std::vector<std::string> reject_reasons_;
  double slo_ttft_ms_, slo_tbt_ms_;
  std::size_t warmup_;
  std::int64_t measure_from_us_;
  // Load imbalance: the time integral of max/mean running while any request runs.
  std::int64_t last_sample_ = 0;
  double last_ratio_ = 0, last_floor_ = 0;
  bool last_busy_ = false;
  double ratio_integral_ = 0, floor_integral_ = 0;
  double busy_time_ = 0;
};

}  // namespace tessera
