// weighted: llm-d's default scheduling profile, a weighted sum of three scores in [0, 1] and the
// highest total wins (max-score picker):
//   queue-scorer                 (max_waiting - waiting) / (max_waiting - min_waiting), 1 if all
//   equal kv-cache-utilization-scorer  1 - KV utilisation prefix-cache-scorer          matched
//   blocks / the prompt's blocks
#include <algorithm>

#include "serve/policies/policies.h"

namespace tessera::serve {

namespace {

class WeightedPolicy final : public RoutingPolicy {
 public:
  std::string_view name() const override { return "weighted"; }
  RouteDecision Route(const RouteRequest& request, const RouteContext& ctx) override {
    const RoutingConfig& c = *ctx.config;
    std::int32_t min_q = ctx.loads[ctx.candidates.front()].waiting, max_q = min_q;
    for (std::int32_t r : ctx.candidates) {
      min_q = std::min(min_q, ctx.loads[r].waiting);
      max_q = std::max(max_q, ctx.loads[r].waiting);
    }
    std::int32_t best = -1;
    double best_score = 0;
    for (std::int32_t r : ctx.candidates) {
      const ReplicaLoad& l = ctx.loads[r];
      const double queue = max_q == min_q ? 1.0
                                          : static_cast<double>(max_q - l.waiting) /
                                                static_cast<double>(max_q - min_q);
      const double kv = 1.0 - std::clamp(l.kv_utilisation, 0.0, 1.0);
      const double prefix = request.blocks.empty() ? 0.0
                                                   : static_cast<double>(ctx.matched_blocks[r]) /
                                                         static_cast<double>(request.blocks.size());
      const double score = c.queue_weight * queue + c.kv_weight * kv + c.prefix_weight * prefix;
      if (best < 0 || score > best_score) {
        best = r;
        best_score = score;
      }
    }
    return RouteDecision{best};
  }
};

}  // namespace

std::unique_ptr<RoutingPolicy> MakeWeightedPolicy() { return std::make_unique<WeightedPolicy>(); }

}  // namespace tessera::serve
