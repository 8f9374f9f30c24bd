// The order in which a cycle takes jobs: by priority (highest first), the queue policy's key,
// submit time, then job id, so that ties never depend on where a job sits in a snapshot.
// Scheduler::Schedule orders by it, and so must a caller's pre-sorted pending queue
// (Snapshot::pending_in_order: the simulator's replay loop, the controller's PendingQueue).
#pragma once

#include <tuple>

#include "sched/queue/queue_policy.h"
#include "sched/snapshot.h"

namespace tessera {

// A job's place in the order.
struct OrderPlace {
  int neg_priority;
  OrderKey key;
  Tick submit;
  JobId id;
  const JobView* view;
};

inline OrderPlace PlaceOf(const QueuePolicy& policy, const JobView& v, Tick now) {
  return {-v.job->priority, policy.Key(v, now), v.job->submit, v.job->id, &v};
}

// "a comes after b": std::*_heap with this comparator keeps the earliest job on top.
inline bool Later(const OrderPlace& a, const OrderPlace& b) {
  return std::tie(a.neg_priority, a.key, a.submit, a.id) >
         std::tie(b.neg_priority, b.key, b.submit, b.id);
}

// Whether job `a` comes before `b` in `policy`'s order at `now`.
inline bool QueueOrderBefore(const QueuePolicy& policy, const JobView& a, const JobView& b,
                             Tick now) {
  return Later(PlaceOf(policy, b, now), PlaceOf(policy, a, now));
}

}  // namespace tessera
