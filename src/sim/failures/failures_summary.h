// summary.json for the failures experiment: the top-level "failures" and "job" fields and one
// result per recovery policy. The fields are listed in docs/failures.md; like every summary,
// they are only ever added to.
#pragma once

#include <nlohmann/json.hpp>

#include "sim/failures/failures_experiment.h"

namespace tessera {

// {"failures": {...}, "job": {...}, "sim_wall_seconds": ...}, to merge into the summary's head.
nlohmann::json FailuresHeadJson(const FailuresResult& r, const FailuresOptions& options);
// One entry of "results".
nlohmann::json FailuresPolicyJson(const FailuresPolicyResult& p, const FailuresResult& result,
                                  const FailuresOptions& options);

}  // namespace tessera
