// `tessera sim --experiment replay --from-export FILE`: a live cluster's export (`tessera
// export`) replayed on the simulator's clock, and compared with what the live cluster decided
// (sim/live_export.h, sim/export_comparison.h; docs/live-cluster.md).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace tessera::cli {

// Replays the export under its own policies (or each of `policies`, comma-separated, instead:
// what another queue policy would have done); returns summary.json, having printed the
// comparison to stdout. With `event_log`, writes the replay's event log there.
Result<nlohmann::json> RunExportReplay(const std::string& path, const std::string& policies,
                                       const std::string& event_log);

}  // namespace tessera::cli
