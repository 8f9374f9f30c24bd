// tessera: the replica predicted to give the first token soonest, from the engine model: the
// prefill queued on it plus the uncached part of this prompt (so a cache hit counts as the work
// it saves, not as a bonus score). Hot replicas (running requests well above the mean, or a
// predicted token gap over the TBT SLO) are passed over while another replica is not hot, so a
// popular prefix cannot pile every request onto one replica. When even the best prediction
// misses the TTFT SLO although an idle replica would meet it, the request is refused at once
// (Mooncake's early rejection) rather than queued to fail.
#include <algorithm>
#include <limits>

#include "serve/policies/policies.h"

namespace tessera::serve {

namespace {

class TesseraPolicy final : public RoutingPolicy {
 public:
  std::string_view name() const override { return "tessera"; }
  RouteDecision Route(const RouteRequest& request, const RouteContext& ctx) override {
    const RoutingConfig& c = *ctx.config;
    double mean = 0;
    for (std::int32_t r : ctx.candidates) mean += ctx.loads[r].requests();
    mean /= static_cast<double>(ctx.candidates.size());
    const double hot_above = c.hot_rel * mean + c.hot_abs;

    constexpr double kInf = std::numeric_limits<double>::infinity();
    std::int32_t cool = -1, any = -1;
    double cool_ttft = kInf, any_ttft = kInf;
    std::int64_t least_uncached = request.prompt_tokens;
    for (std::int32_t r : ctx.candidates) {
      const ReplicaLoad& l = ctx.loads[r];
      const std::int64_t uncached = request.prompt_tokens - CachedTokens(request, ctx, r);
      least_uncached = std::min(least_uncached, uncached);
      const double ttft = PredictTtftMs(*ctx.engine, l, uncached, request.prompt_tokens);
      if (ttft < any_ttft) {
        any = r;
        any_ttft = ttft;
      }
      const bool hot = l.requests() > hot_above ||
                       PredictTbtMs(*ctx.engine, l, request.prompt_tokens) > c.slo_tbt_ms;
      if (!hot && ttft < cool_ttft) {
        cool = r;
        cool_ttft = ttft;
      }
    }
    const std::int32_t pick = cool >= 0 ? cool : any;
    const double predicted = cool >= 0 ? cool_ttft : any_ttft;
    // Refuse only what queueing makes miss: a prompt too long to meet the SLO even on an idle
    // replica is served as well as it can be (refusing it would not help the others much).
    const double unqueued =
        PredictTtftMs(*ctx.engine, ReplicaLoad{}, least_uncached, request.prompt_tokens);
    if (c.reject_factor > 0 && predicted > c.reject_factor * c.slo_ttft_ms &&
        unqueued <= c.slo_ttft_ms) {
      return RouteDecision{-1, RejectReason::kTtftSlo, predicted};
    }
    return RouteDecision{pick, RejectReason::kNone, predicted};
  }
};

}  // namespace

std::unique_ptr<RoutingPolicy> MakeTesseraPolicy() { return std::make_unique<TesseraPolicy>(); }

}  // namespace tessera::serve
