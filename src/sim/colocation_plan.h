// The co-location experiment's plan file (docs/colocation.md, "Two clocks"): the workload a run
// drew (services with their load per step, offline tasks with arrivals, run times and shapes)
// and the timing it was drawn for, as JSON. bench/colocation_live.py replays it live and
// `tessera sim --experiment colocation --plan FILE` runs it again, so both clocks see one draw.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"
#include "sim/colocation_experiment.h"

namespace tessera {

nlohmann::json ColocationPlanJson(const ColocationWorkload& workload,
                                  const ColocationOptions& options);

// The workload of a plan. Sets `options`' step, warm-up, horizon, scale-down and usage windows
// and target utilisation from it (the plan's loads are per step of that timing). Errors name
// the file, the field and the reason.
Result<ColocationWorkload> ReadColocationPlan(const std::string& path, ColocationOptions& options);

}  // namespace tessera
