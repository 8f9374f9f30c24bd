// The serving experiment: an LLM request trace through N simulated engine replicas behind each
// router, on the virtual clock (docs/serving.md). The router and the engine model are
// src/serve/'s, the same code the gateway and the simulated engine run; the loop is the
// simulator's one EventLoop, with metrics as an observer.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/engine_profile.h"
#include "core/status.h"
#include "serve/routing_policy.h"
#include "sim/trace/llm_trace.h"

namespace tessera {

// What the router knows of the replicas' load when it decides. kEngine: the engines' own state
// (what vLLM's metrics report, read without delay). kGateway: what tessera-gateway knows from
// the requests it sent (serve::RoutedLoad: the whole uncached prompt is queued until the first
// token, no KV utilisation), with its block index bounded per replica as the gateway bounds it
// (serve::IndexCapacityFor) and each step's KV events learned when the step ends, as the
// simulated engine publishes them; so a run decides from the same inputs as the live gateway.
enum class LoadView { kEngine, kGateway };
Result<LoadView> ParseLoadView(std::string_view name);
std::string_view LoadViewName(LoadView view);

struct ServingOptions {
  int replicas = 16;
  EngineProfile engine;
  std::vector<std::string> routers{"round-robin", "least-request", "prefix", "weighted", "tessera"};
  double rate_scale = 1.0;                 // arrival times are divided by it
  std::int64_t kv_blocks_per_replica = 0;  // 0 = the engine profile's KV cache
  double slo_ttft_ms = 5000;
  double slo_tbt_ms = 100;
  int block_tokens = 16;         // the trace's hashed block size when it has one
  serve::RoutingConfig routing;  // the policies' parameters (slo_ttft_ms is set from above)
  LoadView load_view = LoadView::kEngine;
  // The trace's first warmup_requests requests run (they fill the caches) but are left out of
  // every per-request figure: a slice then measures a warm cluster, as the trace's steady state.
  std::int64_t warmup_requests = 0;
  // Each arrival moves later by a uniform draw in [0, arrival_jitter_us) from a stream seeded by
  // jitter_seed: how much the figures move under timing noise of that size (a live clock's).
  std::int64_t arrival_jitter_us = 0;
  std::uint64_t jitter_seed = 0;
};

struct LatencySummary {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
  std::int64_t count = 0;
};
LatencySummary SummarizeLatency(std::vector<double> values);

struct ServingRun {
  std::string router;
  double rate_scale = 1;
  std::int64_t requests = 0;
  std::int64_t completed = 0;
  std::int64_t rejected = 0;
  std::map<std::string, std::int64_t> reject_reasons;
  LatencySummary ttft_ms, tbt_ms, e2e_ms;
  double prefix_hit_rate = 0;  // prompt tokens from KV cache (GPU or host tier) / prompt tokens
  double host_hit_rate = 0;    // the part of it reloaded from the host tier
  double slo_attainment = 0;
  double goodput_rps = 0;
  double load_imbalance = 0;
  // The same average for a perfect balance of the same running requests (ceil(sum / N) / mean):
  // what no router can go below; near 2 when fewer requests run than there are replicas.
  double load_imbalance_floor = 0;
  double duration_seconds = 0;
  // Prompt tokens each request found cached, in trace order, warm-up included; -1: rejected (for
  // per-request comparisons such as the live replay's; not in summary.json).
  std::vector<std::int64_t> hit_tokens;
  std::vector<double> request_ttft_ms;  // likewise, each request's TTFT; -1: not served
  std::uint64_t events = 0;
  double wall_seconds = 0;
};

// One router on the trace at options.rate_scale.
Result<ServingRun> RunServing(const LlmTrace& trace, const std::string& router,
                              const ServingOptions& options);

}  // namespace tessera
