// round-robin: each request to the next ready replica in turn, blind to load and cache.
#include "serve/policies/policies.h"

namespace tessera::serve {

namespace {

class RoundRobinPolicy final : public RoutingPolicy {
 public:
  std::string_view name() const override { return "round-robin"; }
  RouteDecision Route(const RouteRequest&, const RouteContext& ctx) override {
    const std::size_t pick = cursor_++ % ctx.candidates.size();
    return RouteDecision{ctx.candidates[pick]};
  }

 private:
  std::size_t cursor_ = 0;
};

}  // namespace

std::unique_ptr<RoutingPolicy> MakeRoundRobinPolicy() {
  return std::make_unique<RoundRobinPolicy>();
}

}  // namespace tessera::serve
