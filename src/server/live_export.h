// GET /v1/export (`tessera export -o FILE`, admins only: specs carry env): everything a replay
// of the live cluster in the simulator needs, in one JSON document (docs/live-cluster.md,
// "Replaying a live cluster"):
//
//   {"kind": "TesseraExport", "version": 1, "exportedAtMs": MS,
//    "controller": {"queuePolicy", "placementPolicy", "priorityPreemption", "gangPlacement",
//                   "backfillReservation", "gpuModelChoice", "lasThresholdsGpuSeconds",
//                   "colocation" (on or off), "seed", "topologyLevels": [...], "recovery",
//                   "sparesPerDomain", "cycles"},
//    "queueTree": a queue file as JSON (spec/queue_file.h), or null without one,
//    "nodes": [node records, in name order (the scheduler's node ids), with "topology" and
//              "gpus" as objects],
//    "jobs": [job records with "spec" the full job spec (JSON), "units" and "tasks"
//             (every attempt)],
//    "events": [every event of the store, oldest first, as GET /v1/events shows them]}
//
// The records are copied under the controller's lock and turned into JSON after it (a spec
// parse per job); the events are read from the store then, up to the last one committed when
// the state was copied.
#pragma once

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/controller_core.h"

namespace tessera {

inline constexpr int kLiveExportVersion = 1;

ApiResult<nlohmann::json> ExportLiveState(ControllerCore& core);

}  // namespace tessera
