// Failure files: a recorded incident (or a hand-written scenario) replayed exactly. CSV with a
// header, one failure per line:
//
//   time_seconds,component,target[,repair_seconds]
//   3600,gpu,node-0042
//   7200.5,leaf_switch,leaf-3,1800
//
// `component` is gpu, host, nic, leaf_switch or software (see failure_model.h); `target` is a
// node's name or index, or for leaf_switch a leaf's name or index; `repair_seconds`, when given,
// is how long the part stays out (else the failure model's mean for that component). Blank lines
// and lines starting with '#' are skipped. Every error names the file, the line and the field.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/cluster.h"
#include "core/status.h"
#include "core/time.h"
#include "sched/recovery/recovery_topology.h"
#include "sim/failures/failure_model.h"

namespace tessera {

// Reads failures over a run of `horizon`; a time outside [0, horizon) is an error. Events come
// back sorted by time (ties in file order).
Result<std::vector<FailureEvent>> ParseFailureCsv(std::string_view text, std::string_view source,
                                                  const Cluster& cluster,
                                                  const RecoveryTopology& topology, Tick horizon);
Result<std::vector<FailureEvent>> LoadFailureFile(const std::string& path, const Cluster& cluster,
                                                  const RecoveryTopology& topology, Tick horizon);

// Writes events in the same form (names for targets), so that a generated schedule can be
// saved, edited and replayed.
std::string FailureCsv(const std::vector<FailureEvent>& events, const Cluster& cluster,
                       const RecoveryTopology& topology);

}  // namespace tessera
