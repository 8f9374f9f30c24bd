// The record a scheduling cycle with decisions commits with them, as the message of one
// SchedulingCycle event (object "cycle/N"): one JSON object holding the cycle's clock, the run
// seed and the cycle's number (the scheduler's seed is Rng::Mix(seed, cycle), as in
// `tessera sim`), the counts, and the decisions themselves, so that `tessera sim --experiment
// replay --from-export` can replay the cycle and compare:
//
//   {"clock": MS, "seed": N, "cycle": N, "bound": N, "preempted": N, "resized": N,
//    "unschedulable": N, "deferred": N, "dropped": N,
//    "binds": [{"job": "QUEUE/NAME", "unit": U, "attempt": A, "on": ["NODE:GPUS", ...]}],
//    "preemptions": [{"job": "QUEUE/NAME", "unit": U, "by": "QUEUE/NAME"}],
//    "resizes": [{"job": "QUEUE/NAME", "unit": U, "workers": W, "on": [...]}],
//    "truncated": false}
//
// "on" lists a unit's tasks in rank order as core/task_place_text.h writes them. The counts
// are always whole; the lists stop before the message passes `max_bytes` (a cycle binding
// 10,000 tasks writes tens of KB, not MB): then "truncated" is true and "omitted" counts the
// binds, preemptions and resizes left out.
//
// Pure; runs under ControllerCore's mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/time.h"
#include "server/controller_state.h"
#include "server/decision_applier.h"
#include "server/snapshot_builder.h"

namespace tessera {

inline constexpr std::size_t kMaxCycleRecordBytes = 64 * 1024;

struct CycleClock {
  Tick clock = 0;
  std::uint64_t seed = 0;   // the run's (tesserad --seed)
  std::uint64_t cycle = 0;  // its number since the controller started
};

std::string CycleRecordMessage(const CycleClock& at, const AppliedDecisions& applied,
                               const ControllerState& state, const CycleCluster& cluster,
                               std::size_t max_bytes = kMaxCycleRecordBytes);

}  // namespace tessera
