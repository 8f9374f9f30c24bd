// Factories of the built-in placement policies; MakePlacementPolicy picks one by name.
#pragma once

#include <memory>

#include "sched/placement/placement_policy.h"

namespace tessera {

std::unique_ptr<PlacementPolicy> MakeRandomPolicy();
std::unique_ptr<PlacementPolicy> MakeFirstFitPolicy();
std::unique_ptr<PlacementPolicy> MakeBestFitPolicy();
std::unique_ptr<PlacementPolicy> MakeDotProductPolicy();
std::unique_ptr<PlacementPolicy> MakeGpuPackingPolicy();
std::unique_ptr<PlacementPolicy> MakeGpuClusteringPolicy();
std::unique_ptr<PlacementPolicy> MakeFgdPolicy(const PlacementConfig& config);
std::unique_ptr<PlacementPolicy> MakeFgdStrandPolicy(const PlacementConfig& config);

}  // namespace tessera
