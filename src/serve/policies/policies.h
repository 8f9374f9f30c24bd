// The routing policies' constructors, for the registry (routing_registry.cpp).
#pragma once

#include <memory>

#include "serve/routing_policy.h"

namespace tessera::serve {

std::unique_ptr<RoutingPolicy> MakeRoundRobinPolicy();
std::unique_ptr<RoutingPolicy> MakeLeastRequestPolicy();
std::unique_ptr<RoutingPolicy> MakePrefixPolicy();
std::unique_ptr<RoutingPolicy> MakeWeightedPolicy();
std::unique_ptr<RoutingPolicy> MakeTesseraPolicy();

}  // namespace tessera::serve
