// What the controller keeps per autoscaled InferenceService (server/service_scaling.h), in
// memory only: after a restart a service keeps the replicas it runs and the autoscaler starts
// afresh, as HPA's controller does.
#pragma once

#include <map>
#include <optional>

#include "core/time.h"
#include "sched/autoscale/autoscaler.h"
#include "store/records.h"

namespace tessera {

struct ControllerState;

struct ServiceScale {
  std::optional<Autoscaler> autoscaler;
  int desired = 0;               // replicas wanted: the pending gate and the drains follow it
  std::map<int, Tick> draining;  // unit -> when its drain began (no new requests from then)
  double last_value = 0;         // the last sample's value, for describe
  int last_measured = 0;         // replicas it was measured over
};

// Whether the task belongs to a replica being drained (service_scaling.h).
bool IsDrainingTask(const ControllerState& state, const TaskRecord& task);

}  // namespace tessera
