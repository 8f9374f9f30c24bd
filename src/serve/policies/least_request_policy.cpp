// least-request: the replica with the fewest requests running or waiting (Envoy's
// LEAST_REQUEST, and what a Kubernetes gateway without an inference extension gives).
#include "serve/policies/policies.h"

namespace tessera::serve {

namespace {

class LeastRequestPolicy final : public RoutingPolicy {
 public:
  std::string_view name() const override { return "least-request"; }
  RouteDecision Route(const RouteRequest&, const RouteContext& ctx) override {
    std::int32_t best = ctx.candidates.front();
    for (std::int32_t r : ctx.candidates) {
      if (ctx.loads[r].requests() < ctx.loads[best].requests()) best = r;
    }
    return RouteDecision{best};
  }
};

}  // namespace

std::unique_ptr<RoutingPolicy> MakeLeastRequestPolicy() {
  return std::make_unique<LeastRequestPolicy>();
}

}  // namespace tessera::serve
