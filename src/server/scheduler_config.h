// The controller's scheduler settings from a YAML file:
//   queuePolicy: fifo            # fifo | backfill | srtf | srsf | las
//   placementPolicy: bestfit     # see PlacementPolicyNames()
//   gangPlacement: topology      # topology | greedy
//   backfillReservation: domain  # domain | gpu-count (docs/backfill.md)
//   gpuModelChoice: fastest      # fastest | blind (docs/heterogeneous.md)
//   elastic: true                # always on live (jobs with spec.elastic); false is refused
//   lasThresholdsGpuSeconds: [3600]
// Unknown keys and unknown policy names are errors that name the key.
#pragma once

#include <string>

#include "core/status.h"
#include "sched/scheduler.h"

namespace tessera {

Result<SchedulerConfig> LoadSchedulerConfig(const std::string& path);

}  // namespace tessera
