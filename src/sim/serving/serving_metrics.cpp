#include "sim/serving/serving_metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tessera {

LatencySummary SummarizeLatency(std::vector<double> v) {
  LatencySummary s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  const auto rank = [&](double q) {  // nearest rank, as sim/stats.h
    auto r = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::clamp<std::size_t>(r, 1, v.size()) - 1];
  };
  s.count = static_cast<std::int64_t>(v.size());
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  s.p50 = rank(0.50);
  s.p90 = rank(0.90);
  s.p99 = rank(0.99);
  return s;
}

ServingMetrics::ServingMetrics(std::size_t requests, double slo_ttft_ms, double slo_tbt_ms,
                               std::size_t warmup, std::int64_t measure_from_us)
    : requests_(requests),
      slo_ttft_ms_(slo_ttft_ms),
      slo_tbt_ms_(slo_tbt_ms),
      warmup_(warmup),
      measure_from_us_(measure_from_us) {}

void ServingMetrics::Arrived(std::size_t request, std::int64_t now_us, std::int64_t prompt_tokens) {
  requests_[request].arrival = now_us;
  requests_[request].prompt = prompt_tokens;
}

void ServingMetrics::Rejected(std::size_t request, const std::string& reason) {
  requests_[request].rejected = true;
  if (request >= warmup_) reject_reasons_.push_back(reason);
}

void ServingMetrics::Admitted(std::size_t request, const serve::Admission& a) {
  requests_[request].hit = a.gpu_hit_tokens + a.host_hit_tokens;
  requests_[request].host_hit = a.host_hit_tokens;
}

void ServingMetrics::Token(std::size_t request, std::int64_t now_us, bool last) {
  PerRequest& r = requests_[request];
  if (r.first < 0) {
    r.first = now_us;
  } else if (request >= warmup_) {
    gaps_ms_.push_back(static_cast<double>(now_us - r.last_token) / 1000);
  }
  r.last_token = now_us;
  ++r.tokens;
  r.done = last;
}

void ServingMetrics::Sample(std::int64_t now_us, const std::vector<std::int32_t>& running) {
  if (last_busy_ && now_us > measure_from_us_) {
    const auto dt = static_cast<double>(now_us - std::max(last_sample_, measure_from_us_));
    ratio_integral_ += last_ratio_ * dt;
    floor_integral_ += last_floor_ * dt;
    busy_time_ += dt;
  }
  const std::int64_t sum = std::accumulate(running.begin(), running.end(), std::int64_t{0});
  last_busy_ = sum > 0;
  if (last_busy_) {
    const double mean = static_cast<double>(sum) / static_cast<double>(running.size());
    last_ratio_ = *std::max_element(running.begin(), running.end()) / mean;
    const auto n = static_cast<std::int64_t>(running.size());
    last_floor_ = static_cast<double>((sum + n - 1) / n) / mean;
  }
  last_sample_ = now_us;
}

void ServingMetrics::Finish(std::int64_t duration_us, ServingRun* run) const {
  std::vector<double> ttft, tbt = gaps_ms_, e2e;
  double prompt = 0, hit = 0, host = 0;
  std::int64_t met = 0;
  for (std::size_t i = 0; i < requests_.size(); ++i) {
    const PerRequest& r = requests_[i];
    run->hit_tokens.push_back(r.rejected ? -1 : r.hit);  // hit counts the host tier's part
    run->request_ttft_ms.push_back(
        r.rejected || r.first < 0 ? -1 : static_cast<double>(r.first - r.arrival) / 1000);
    if (i < warmup_) continue;
    ++run->requests;
    if (r.rejected) {
      ++run->rejected;
      continue;
    }
    prompt += static_cast<double>(r.prompt);
    hit += static_cast<double>(r.hit);
    host += static_cast<double>(r.host_hit);
    if (!r.done) continue;
    ++run->completed;
    const double t = static_cast<double>(r.first - r.arrival) / 1000;
    ttft.push_back(t);
    e2e.push_back(static_cast<double>(r.last_token - r.arrival) / 1000);
    const double mean_gap = r.tokens > 1 ? static_cast<double>(r.last_token - r.first) / 1000 /
                                               static_cast<double>(r.tokens - 1)
                                         : 0;
    if (t <= slo_ttft_ms_ && mean_gap <= slo_tbt_ms_) ++met;
  }
  for (const std::string& reason : reject_reasons_) ++run->reject_reasons[reason];
  run->ttft_ms = SummarizeLatency(std::move(ttft));
  run->tbt_ms = SummarizeLatency(std::move(tbt));
  run->e2e_ms = SummarizeLatency(std::move(e2e));
  run->prefix_hit_rate = prompt > 0 ? hit / prompt : 0;
  run->host_hit_rate = prompt > 0 ? host / prompt : 0;
  run->slo_attainment =
      run->requests > 0 ? static_cast<double>(met) / static_cast<double>(run->requests) : 0;
  run->duration_seconds = static_cast<double>(duration_us) / 1e6;
  run->goodput_rps = duration_us > 0 ? static_cast<double>(met) / run->duration_seconds : 0;
  run->load_imbalance = busy_time_ > 0 ? ratio_integral_ / busy_time_ : 0;
  run->load_imbalance_floor = busy_time_ > 0 ? floor_integral_ / busy_time_ : 0;
}

}  // namespace tessera
