// prefix: SGLang router's cache_aware policy. When the load is imbalanced (max - min above
// balance_abs_threshold and max above balance_rel_threshold * min, both), the least loaded
// replica; otherwise the replica with the longest cached prefix if it covers more than
// cache_threshold of the prompt, else the replica caching the least (most room for new blocks).
#include <algorithm>

#include "serve/policies/policies.h"

namespace tessera::serve {

namespace {

class PrefixPolicy final : public RoutingPolicy {
 public:
  std::string_view name() const override { return "prefix"; }
  RouteDecision Route(const RouteRequest& request, const RouteContext& ctx) override {
    const RoutingConfig& c = *ctx.config;
    std::int32_t least = ctx.candidates.front();
    std::int32_t max_load = 0;
    for (std::int32_t r : ctx.candidates) {
      max_load = std::max(max_load, ctx.loads[r].requests());
      if (ctx.loads[r].requests() < ctx.loads[least].requests()) least = r;
    }
    const std::int32_t min_load = ctx.loads[least].requests();
    const bool imbalanced = max_load - min_load > c.balance_abs_threshold &&
                            max_load > min_load * c.balance_rel_threshold;
    if (imbalanced) return RouteDecision{least};

    std::int32_t longest = ctx.candidates.front();
    std::int32_t smallest = ctx.candidates.front();
    for (std::int32_t r : ctx.candidates) {
      if (ctx.matched_blocks[r] > ctx.matched_blocks[longest]) longest = r;
      // Equal trees (nothing cached yet, or a trace without block hashes): the less loaded.
      if (ctx.cached_blocks[r] < ctx.cached_blocks[smallest] ||
          (ctx.cached_blocks[r] == ctx.cached_blocks[smallest] &&
           ctx.loads[r].requests() < ctx.loads[smallest].requests())) {
        smallest = r;
      }
    }
    const double match_rate = request.prompt_tokens == 0
                                  ? 0
                                  : static_cast<double>(CachedTokens(request, ctx, longest)) /
                                        static_cast<double>(request.prompt_tokens);
    return RouteDecision{match_rate > c.cache_threshold ? longest : smallest};
  }
};

}  // namespace

std::unique_ptr<RoutingPolicy> MakePrefixPolicy() { return std::make_unique<PrefixPolicy>(); }

}  // namespace tessera::serve
