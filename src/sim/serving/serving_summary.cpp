#include "sim/serving/serving_summary.h"

namespace tessera {

namespace {

nlohmann::json LatencyJson(const LatencySummary& s) {
  return {{"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}, {"count", s.count}};
}

}  // namespace

nlohmann::json ServingHeadJson(const ServingHead& h) {
  const ServingOptions& o = *h.options;
  const EngineProfile& e = o.engine;
  return {{"experiment", "serving"},
          {"trace",
           {{"path", h.trace_path},
            {"requests", h.trace->requests.size()},
            {"format", h.trace->format},
            {"block_tokens", h.trace->block_tokens}}},
          {"serving",
           {{"replicas", o.replicas},
            {"engine",
             {{"name", e.name},
              {"model", e.model},
              {"gpu", e.gpu},
              {"simulated", true},
              {"kv_cache_tokens", e.kv_cache_tokens},
              {"host_cache_tokens", e.host_cache_tokens}}},
            {"rate_scale", o.rate_scale},
            {"kv_blocks_per_replica", h.kv_blocks_per_replica},
            {"kv_blocks_per_replica_auto", h.kv_blocks_auto},
            {"slo_ttft_ms", o.slo_ttft_ms},
            {"slo_tbt_ms", o.slo_tbt_ms},
            {"load_view", LoadViewName(o.load_view)},
            {"global_lru_hit_rate", h.global_lru_hit_rate},
            {"unlimited_hit_rate", h.unlimited_hit_rate}}},
          {"simulated_gpus", true},
          {"generated_by", "tessera sim (simulated engines)"},
          {"results", nlohmann::json::array()}};
}

nlohmann::json ServingRunJson(const ServingRun& r, double global_lru_hit_rate) {
  return {{"router", r.router},
          {"policy", r.router},
          {"requests", r.requests},
          {"completed", r.completed},
          {"rejected", r.rejected},
          {"reject_reasons", r.reject_reasons},
          {"prefix_hit_rate", r.prefix_hit_rate},
          {"host_hit_rate", r.host_hit_rate},
          {"global_lru_hit_rate", global_lru_hit_rate},
          {"ttft_ms", LatencyJson(r.ttft_ms)},
          {"tbt_ms", LatencyJson(r.tbt_ms)},
          {"e2e_ms", LatencyJson(r.e2e_ms)},
          {"slo_attainment", r.slo_attainment},
          {"goodput_rps", r.goodput_rps},
          {"load_imbalance", r.load_imbalance},
          {"load_imbalance_floor", r.load_imbalance_floor},
          {"duration_seconds", r.duration_seconds},
          {"events", r.events},
          {"run_wall_seconds", r.wall_seconds}};
}

nlohmann::json ServingSweepPointJson(const ServingRun& r) {
  return {{"router", r.router},
          {"rate_scale", r.rate_scale},
          {"request_rate_rps",
           r.duration_seconds > 0 ? static_cast<double>(r.requests) / r.duration_seconds : 0},
          {"goodput_rps", r.goodput_rps},
          {"slo_attainment", r.slo_attainment},
          {"prefix_hit_rate", r.prefix_hit_rate},
          {"ttft_p99_ms", r.ttft_ms.p99},
          {"rejected", r.rejected},
          {"ttft_mean_ms", r.ttft_ms.mean},
          {"load_imbalance", r.load_imbalance},
          {"load_imbalance_floor", r.load_imbalance_floor}};
}

}  // namespace tessera
