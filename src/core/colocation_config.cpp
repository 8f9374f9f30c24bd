#include "core/colocation_config.h"

#include <algorithm>
#include <string>

namespace tessera {

CoClass ClassOf(const ColocationConfig& config, WorkloadKind kind) {
  if (std::ranges::find(config.online, kind) != config.online.end()) return CoClass::kOnline;
  if (std::ranges::find(config.offline, kind) != config.offline.end()) return CoClass::kOffline;
  return CoClass::kOther;
}

Status ValidateColocationConfig(const ColocationConfig& config) {
  if (config.oversell_permille < 0 || config.oversell_permille > 1000) {
    return InvalidArgument(
        "oversell: must be between 0 and 1 (a share of online replicas' unused GPU)");
  }
  if (config.online.empty()) return InvalidArgument("online: must name at least one kind");
  if (config.offline.empty()) return InvalidArgument("offline: must name at least one kind");
  for (WorkloadKind k : config.online) {
    if (std::ranges::find(config.offline, k) != config.offline.end()) {
      return InvalidArgument("offline: " + std::string(KindName(k)) +
                             " is also online; a kind is one or the other");
    }
  }
  if (config.eviction_cost < 0) return InvalidArgument("evictionCostSeconds: must be >= 0");
  return {};
}

}  // namespace tessera
