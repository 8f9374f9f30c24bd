// What one scheduling cycle decides. Outcomes are values with reasons: a job that cannot start
// now simply stays pending; `kUnschedulable` is only for a job that can never fit as it is.
#pragma once

#include <string>
#include <vector>

#include "core/ids.h"
#include "core/placement.h"

namespace tessera {

struct Decision {
  enum class Kind { kBind, kPreempt, kUnschedulable };
  Kind kind = Kind::kBind;
  JobId job;
  Placement placement;  // kBind: where each task goes, in rank order
  std::string reason;   // kPreempt and kUnschedulable: why
  bool oversold = false;  // kBind: placed on online replicas' credit (sched/colocation/oversell.h)
};

using Decisions = std::vector<Decision>;

}  // namespace tessera
