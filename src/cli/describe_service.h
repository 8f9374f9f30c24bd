// `tessera describe job NAME` of an InferenceService: where its requests go in (the gateway the
// controller knows, `tesserad --gateway URL`) and each replica's endpoint and readiness, as the
// gateway sees it (its GET /v1/services) or, without a gateway, as the replica's own /health
// answers.
#pragma once

#include <nlohmann/json.hpp>

namespace tessera::cli {

// The "serving" object describe adds to an InferenceService's detail: {gateway, gatewayError?,
// readinessFrom: "gateway" | "health", replicas: [{rank, endpoint, ready, state, inFlight?,
// lastError?}]} over the job's Running tasks. Asks the gateway or the replicas (1 s timeouts).
nlohmann::json ServingView(const nlohmann::json& job);
// Prints the view under a "Serving:" heading.
void PrintServingView(const nlohmann::json& view);

}  // namespace tessera::cli
