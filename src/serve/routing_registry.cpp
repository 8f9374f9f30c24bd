// The routing policies by name, and the predictions and helpers they share.
#include <algorithm>
#include <cmath>

#include "serve/engine_model.h"
#include "serve/policies/policies.h"
#include "serve/routing_policy.h"

namespace tessera::serve {

namespace {

struct Entry {
  std::string_view name;
  std::unique_ptr<RoutingPolicy> (*make)();
};

constexpr Entry kPolicies[] = {
    {"round-robin", MakeRoundRobinPolicy}, {"least-request", MakeLeastRequestPolicy},
    {"prefix", MakePrefixPolicy},          {"weighted", MakeWeightedPolicy},
    {"tessera", MakeTesseraPolicy},
};

}  // namespace

std::string_view RejectReasonName(RejectReason r) {
  switch (r) {
    case RejectReason::kNone:
      return "";
    case RejectReason::kNoReadyReplica:
      return "no ready replica";
    case RejectReason::kTtftSlo:
      return "no replica can meet the TTFT SLO";
  }
  return "";
}

std::vector<std::string> RoutingPolicyNames() {
  std::vector<std::string> names;
  for (const Entry& e : kPolicies) names.emplace_back(e.name);
  return names;
}

Status SetRoutingParam(RoutingConfig* config, std::string_view name, double value) {
  if (!std::isfinite(value) || value < 0) {
    return InvalidArgument("routing parameter " + std::string(name) + ": must be finite and >= 0");
  }
  struct Field {
    std::string_view name;
    double RoutingConfig::*field;
  };
  static constexpr Field kFields[] = {
      {"cache_threshold", &RoutingConfig::cache_threshold},
      {"balance_rel_threshold", &RoutingConfig::balance_rel_threshold},
      {"queue_weight", &RoutingConfig::queue_weight},
      {"kv_weight", &RoutingConfig::kv_weight},
      {"prefix_weight", &RoutingConfig::prefix_weight},
      {"hot_rel", &RoutingConfig::hot_rel},
      {"hot_abs", &RoutingConfig::hot_abs},
      {"work_weight", &RoutingConfig::work_weight},
      {"work_per_request", &RoutingConfig::work_per_request},
      {"reject_factor", &RoutingConfig::reject_factor},
      {"hot_penalty_ms", &RoutingConfig::hot_penalty_ms},
  };
  if (name == "balance_abs_threshold") {
    config->balance_abs_threshold = static_cast<std::int32_t>(std::min(value, 1e9));
    return {};
  }
  for (const Field& f : kFields) {
    if (f.name == name) {
      config->*f.field = value;
      return {};
    }
  }
  return InvalidArgument("routing parameter '" + std::string(name) + "' is unknown");
}

Result<std::unique_ptr<RoutingPolicy>> MakeRoutingPolicy(std::string_view name) {
  for (const Entry& e : kPolicies) {
    if (e.name == name) return e.make();
  }
  std::string known;
  for (const Entry& e : kPolicies) known += (known.empty() ? "" : ", ") + std::string(e.name);
  return InvalidArgument("router: '" + std::string(name) + "' is unknown (" + known + ")");
}

std::int64_t CachedTokens(const RouteRequest& request, const RouteContext& ctx, std::int32_t r) {
  const std::int64_t tokens = std::int64_t{ctx.matched_blocks[r]} * ctx.block_tokens;
  return std::min(tokens, std::max<std::int64_t>(0, request.prompt_tokens - 1));
}

double PredictTtftMs(const EngineProfile& e, const ReplicaLoad& load, std::int64_t uncached_tokens,
                     std::int64_t prompt_tokens) {
  const std::int64_t prefill = load.queued_prefill_tokens + uncached_tokens;
  const std::int64_t per_step = std::max<std::int64_t>(1, e.max_batched_tokens - load.running);
  const double steps = std::ceil(static_cast<double>(prefill) / static_cast<double>(per_step));
  const double step_us = StepMicros(e, load.running, load.context_tokens, 0, 0, 0);
  const double own_attention =
      static_cast<double>(uncached_tokens) *
      (static_cast<double>(prompt_tokens) - static_cast<double>(uncached_tokens) / 2) / 1000;
  const double us = steps * step_us + static_cast<double>(prefill) * e.prefill_us_per_token +
                    own_attention * e.prefill_attention_us_per_ktoken;
  return us / 1000;
}

}  // namespace tessera::serve
