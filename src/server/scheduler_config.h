// The controller's settings from a YAML file (`tesserad --config FILE`):
//   queuePolicy: fifo            # fifo | backfill | srtf | srsf | las
//   placementPolicy: bestfit     # see PlacementPolicyNames()
//   gangPlacement: topology      # topology | greedy
//   backfillReservation: domain  # domain | gpu-count (docs/backfill.md)
//   gpuModelChoice: fastest      # fastest | blind (docs/heterogeneous.md)
//   elastic: true                # always on live (jobs with spec.elastic); false is refused
//   lasThresholdsGpuSeconds: [3600]
//   recovery: replace            # requeue | replace | spares (a job's spec.recovery wins)
//   sparesPerDomain: 1           # idle spare nodes kept per leaf domain
// Unknown keys and unknown policy names are errors that name the key. tesserad's flags
// (--queue-policy, --recovery, --spares-per-domain, ...) override what the file says.
#pragma once

#include <optional>
#include <string>

#include "core/recovery_mode.h"
#include "core/status.h"
#include "sched/scheduler.h"

namespace tessera {

struct ControllerConfigFile {
  SchedulerConfig scheduler;
  std::optional<RecoveryMode> recovery;  // unset: the flag's, else requeue
  std::optional<int> spares_per_domain;  // unset: the flag's, else 1 with spares, else 0
};

Result<ControllerConfigFile> LoadControllerConfig(const std::string& path);

}  // namespace tessera
