// tessera: the replica where this request costs least, from the engine model. Cost = its
// predicted time to first token there (the prefill queued on the replica plus the uncached part
// of this prompt, so a cache hit counts as the prefill it saves) + work_weight x that uncached
// prefill's own time: work added to a replica is paid by this request and again by every request
// queued behind it, so under load the replica holding the prefix wins even when a colder one
// would answer this request a little sooner. Hot replicas (requests well above the mean) are
// passed over while another is not hot, so a popular prefix cannot pile every request onto one
// replica. When even the fastest prediction misses the TTFT SLO although an idle replica would
// meet it, the request is refused at once (Mooncake's early rejection) rather than queued to
// fail.
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

    // Cost = predicted TTFT + work_weight * the prefill this request adds to the replica: the
    // uncached work is paid once by this request and again by everyone queued behind it.
    struct Best {
      std::int32_t replica = -1;
      double cost = 0, ttft = 0;
    };
    const auto better = [&](const Best& b, std::int32_t r, double cost) {
      if (b.replica < 0 || cost < b.cost) return true;
      if (cost > b.cost) return false;
      const ReplicaLoad& l = ctx.loads[r];
      const ReplicaLoad& o = ctx.loads[b.replica];
      if (l.requests() != o.requests()) return l.requests() < o.requests();
      return ctx.cached_blocks[r] < ctx.cached_blocks[b.replica];
    };
    Best cool, any, fastest, in_slo;
    std::int64_t least_uncached = request.prompt_tokens;
    std::int64_t work_uncached = -1;
    double work = 0;
    for (std::int32_t r : ctx.candidates) {
      const ReplicaLoad& l = ctx.loads[r];
      const std::int64_t uncached = request.prompt_tokens - CachedTokens(request, ctx, r);
      least_uncached = std::min(least_uncached, uncached);
      const double ttft = PredictTtftMs(*ctx.engine, l, uncached, request.prompt_tokens);
      // Most replicas share the same uncached part (all of the prompt): compute it once.
      if (uncached != work_uncached) {
        work_uncached = uncached;
        work = PredictTtftMs(*ctx.engine, ReplicaLoad{}, uncached, request.prompt_tokens);
      }
      double cost = ttft + (c.work_weight + c.work_per_request * l.requests()) * work;
      if (c.hot_penalty_ms > 0) cost += c.hot_penalty_ms * std::max(0.0, l.requests() - hot_above);
      if (better(any, r, cost)) any = {r, cost, ttft};
      if (better(fastest, r, ttft)) fastest = {r, ttft, ttft};
      if (ttft <= c.slo_ttft_ms && better(in_slo, r, cost)) in_slo = {r, cost, ttft};
      const bool hot = c.hot_penalty_ms == 0 && l.requests() > hot_above;
      if (!hot && better(cool, r, cost)) cool = {r, cost, ttft};
    }
    Best pick = cool.replica >= 0 ? cool : any;
    // The cheapest replica would miss the TTFT SLO but another would not: the cheapest of those.
    if (pick.ttft > c.slo_ttft_ms && in_slo.replica >= 0) pick = in_slo;
    if (pick.ttft > c.slo_ttft_ms) pick = fastest;
    const double predicted = pick.ttft;
    // Refuse only what queueing makes miss: a prompt too long to meet the SLO even on an idle
    // replica is served as well as it can be (refusing it would not help the others much).
    const double unqueued =
        PredictTtftMs(*ctx.engine, ReplicaLoad{}, least_uncached, request.prompt_tokens);
    if (c.reject_factor > 0 && predicted > c.reject_factor * c.slo_ttft_ms &&
        unqueued <= c.slo_ttft_ms) {
      return RouteDecision{-1, RejectReason::kTtftSlo, predicted};
    }
    return RouteDecision{pick.replica, RejectReason::kNone, predicted};
  }
};

}  // namespace

std::unique_ptr<RoutingPolicy> MakeTesseraPolicy() { return std::make_unique<TesseraPolicy>(); }

}  // namespace tessera::serve
