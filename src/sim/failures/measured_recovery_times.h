// The recovery times the live controller achieved (`tessera bench recovery --write-preset
// FILE`), for `tessera sim --experiment failures --recovery-times measured|FILE`. The bench
// writes a JSON file; src/sim/failures/measured_recovery_times.json, the one measured on the
// development machine, is built into the binary (`measured`), and any other file the bench
// wrote is read at run time (`--recovery-times FILE`). Shape (docs/failures.md):
//   {"preset": {"detect_seconds", "restart_seconds", "cold_start_seconds",
//               "cold_start_per_node_seconds", "source"}, "sleep": {...}, "pytorch": {...}}
// where "sleep" and "pytorch" are the bench's raw results per program.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tessera {

struct MeasuredRecoveryTimes {
  double detect_seconds = 0;               // node loss -> the controller's NodeLost
  double restart_seconds = 0;              // detection -> running again, warm nodes (spares)
  double cold_start_seconds = 0;           // what a node new to the job adds (replace - spares)
  double cold_start_per_node_seconds = 0;  // what each further rank moved adds (requeue)
  std::string source;                      // what was measured, where
};

// Parses the bench's JSON (`source_name` names it in errors: "FILE: preset.detect_seconds: ...").
Result<MeasuredRecoveryTimes> ParseMeasuredRecoveryTimes(std::string_view json,
                                                         const std::string& source_name);

// The copy built into the binary (src/sim/failures/measured_recovery_times.json).
Result<MeasuredRecoveryTimes> BuiltInMeasuredRecoveryTimes();

// `measured`: the built-in copy; anything else: a file the bench wrote.
Result<MeasuredRecoveryTimes> LoadMeasuredRecoveryTimes(const std::string& name_or_path);

// The bench's file `existing` (null for a new one) with `run` (one bench run: "program" sleep or
// pytorch, "workers", "conditions", "policies": [{policy, detectMsMean, afterDetectMsMean,
// afterDetectResumedMsMean (pytorch)}]) put in, and "preset" derived again from both programs:
//   detect = the sleep run's mean detection (the larger cluster), else PyTorch's;
//   restart = what spares take after detection until training resumed (PyTorch), else until
//             every rank runs (sleep): warm nodes, a restart in place of the others;
//   cold start = what replace takes beyond spares (one node new to the job), at least 0;
//   cold start per node = what requeue takes beyond replace, per further rank moved, at least 0.
nlohmann::json MergeMeasuredRecoveryRun(const nlohmann::json& existing, const nlohmann::json& run);

}  // namespace tessera
