#include <functional>
#include <utility>

#include "sched/placement/policies.h"

namespace tessera {

namespace {
using Factory = std::function<std::unique_ptr<PlacementPolicy>(const PlacementConfig&)>;

const std::vector<std::pair<std::string, Factory>>& Registry() {
  static const std::vector<std::pair<std::string, Factory>> registry = {
      {"random", [](const PlacementConfig&) { return MakeRandomPolicy(); }},
      {"dotprod", [](const PlacementConfig&) { return MakeDotProductPolicy(); }},
      {"clustering", [](const PlacementConfig&) { return MakeGpuClusteringPolicy(); }},
      {"packing", [](const PlacementConfig&) { return MakeGpuPackingPolicy(); }},
      {"bestfit", [](const PlacementConfig&) { return MakeBestFitPolicy(); }},
      {"fgd", [](const PlacementConfig& c) { return MakeFgdPolicy(c); }},
      {"fgd-strand", [](const PlacementConfig& c) { return MakeFgdStrandPolicy(c); }},
      {"firstfit", [](const PlacementConfig&) { return MakeFirstFitPolicy(); }},
  };
  return registry;
}
}  // namespace

std::vector<std::string> PlacementPolicyNames() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : Registry()) names.push_back(name);
  return names;
}

Result<std::unique_ptr<PlacementPolicy>> MakePlacementPolicy(std::string_view name,
                                                             const PlacementConfig& config) {
  for (const auto& [n, factory] : Registry()) {
    if (n != name) continue;
    auto policy = factory(config);
    policy->set_tie_break(config.tie_break, config.node_rank);
    policy->set_draw_seed(config.draw_seed);
    return policy;
  }
  std::string known;
  for (const auto& n : PlacementPolicyNames()) known += (known.empty() ? "" : ", ") + n;
  return InvalidArgument("placement policy '" + std::string(name) +
                         "' is unknown (known: " + known + ")");
}

}  // namespace tessera
