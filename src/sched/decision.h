// What one scheduling cycle decides. Outcomes are values with reasons: a job that cannot start
// now simply stays pending; `kUnschedulable` is only for a job that can never fit as it is.
#pragma once

#include <string>
#include <vector>

#include "core/ids.h"
#include "core/placement.h"

namespace tessera {

// kResize: a running elastic job (sched/elastic/elastic_resize.h) changes its number of
// workers; `placement` is its whole new placement in rank order, the ranks it keeps unmoved
// (growth appends ranks, shrinking drops the highest). A caller that cannot resize yet (the
// controller) may ignore it; the job then keeps its old placement.
struct Decision {
  enum class Kind { kBind, kPreempt, kUnschedulable, kResize };
  Kind kind = Kind::kBind;
  JobId job;
  Placement placement;    // kBind: where each task goes, in rank order; kResize: the new one
  std::string reason;     // kPreempt and kUnschedulable: why
  bool oversold = false;  // kBind: placed on online replicas' credit (sched/colocation/oversell.h)
  // kPreempt: the job the victim makes room for, where there is one (a priority preemption, a
  // reclaim, a co-location eviction); not valid when a queue order displaced it.
  JobId preemptor;
};

using Decisions = std::vector<Decision>;

}  // namespace tessera
