// summary.json of the co-location experiment: one result per setup (docs/summary-json.md).
#pragma once

#include <nlohmann/json.hpp>

#include "sim/colocation_experiment.h"

namespace tessera {

nlohmann::json ColocationHeadJson(const ColocationResult& r, const ColocationOptions& o);
nlohmann::json ColocationRunJson(const ColocationRun& r);

}  // namespace tessera
