// The routing extension point: given one request, every replica's load and how many of the
// request's leading blocks each replica holds, which replica serves it, or should it be refused?
// The framework (Router) owns the block index, the prefix matching, readiness and recording the
// decision; a policy only chooses. Policies are registered by name: round-robin, least-request,
// prefix (SGLang's cache-aware router), weighted (llm-d's default scorers), tessera (predicted
// TTFT with a hot-spot guard and early rejection). docs/serving.md describes each and its source.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/engine_profile.h"
#include "core/status.h"
#include "serve/block_hash.h"
#include "serve/replica_load.h"

namespace tessera::serve {

// Settings a policy may read; each documents its default and where it comes from.
struct RoutingConfig {
  // prefix: SGLang router's cache_aware defaults (sgl-router, PolicyConfig::CacheAware).
  double cache_threshold = 0.3;
  std::int32_t balance_abs_threshold = 64;
  double balance_rel_threshold = 1.5;
  // weighted: llm-d's default scheduling profile (queue-scorer 2, kv-cache-utilization-scorer 2,
  // prefix-cache-scorer 3).
  double queue_weight = 2;
  double kv_weight = 2;
  double prefix_weight = 3;
  // tessera: the service's TTFT SLO; a replica is "hot" when its requests exceed
  // hot_rel * mean + hot_abs; requests are refused when no replica is predicted to reach the
  // first token within reject_factor * slo_ttft_ms (0 = never refuse) though an idle one would.
  double slo_ttft_ms = 5000;
  double hot_rel = 1.25;
  double hot_abs = 2;
  double work_weight = 10;  // tessera: weight of the prefill a request adds (serving.md)
  // tessera: and per request already on the replica (each of them waits for that prefill too).
  double work_per_request = 0;
  double reject_factor = 1.0;
  // tessera, a soft hot guard: > 0, a hot replica is not passed over but pays this many ms of
  // cost per request above the hot line, so a long cached prefix can still win it. 0 (the
  // default): passed over. docs/serving.md compares the two under timing noise.
  double hot_penalty_ms = 0;
};

struct RouteRequest {
  std::span<const BlockHash> blocks;
  std::int64_t prompt_tokens = 0;
  std::int64_t output_tokens = 0;
};

enum class RejectReason { kNone, kNoReadyReplica, kTtftSlo };
std::string_view RejectReasonName(RejectReason r);

struct RouteDecision {
  std::int32_t replica = -1;  // -1: refused (reason says why)
  RejectReason reason = RejectReason::kNone;
  double predicted_ttft_ms = 0;  // tessera only: the chosen (or best) replica's prediction
};

// What a policy sees. Replicas not ready are already left out of `candidates`.
struct RouteContext {
  std::span<const ReplicaLoad> loads;
  std::span<const std::int32_t> matched_blocks;  // per replica
  std::span<const std::int64_t> cached_blocks;   // per replica: the index's blocks on it
  std::span<const std::int32_t> candidates;      // ready replicas, ascending
  int block_tokens = kDefaultBlockTokens;
  const EngineProfile* engine = nullptr;
  const RoutingConfig* config = nullptr;
};

class RoutingPolicy {
 public:
  virtual ~RoutingPolicy() = default;
  virtual std::string_view name() const = 0;
  // REQUIRES: ctx.candidates is not empty. Ties go to the lowest replica index. A policy may
  // keep state between calls (round-robin's cursor) but uses no randomness.
  virtual RouteDecision Route(const RouteRequest& request, const RouteContext& ctx) = 0;
};

std::vector<std::string> RoutingPolicyNames();
// Sets one RoutingConfig field by its name (cache_threshold, balance_abs_threshold,
// balance_rel_threshold, queue_weight, kv_weight, prefix_weight, hot_rel, hot_abs, work_weight,
// work_per_request, reject_factor, hot_penalty_ms): how the serving experiment's --routing-param
// reaches the policies.
Status SetRoutingParam(RoutingConfig* config, std::string_view name, double value);
Result<std::unique_ptr<RoutingPolicy>> MakeRoutingPolicy(std::string_view name);

// Prompt tokens of `request` that replica `r` holds, by the context's block match.
std::int64_t CachedTokens(const RouteRequest& request, const RouteContext& ctx, std::int32_t r);

// Predicted time to the first token on a replica with `load` for a prompt whose uncached part
// is `uncached_tokens`: the prefill queued ahead of it plus its own, in steps of the engine's
// token budget, each step also carrying the replica's decodes.
double PredictTtftMs(const EngineProfile& engine, const ReplicaLoad& load,
                     std::int64_t uncached_tokens, std::int64_t prompt_tokens);

}  // namespace tessera::serve
