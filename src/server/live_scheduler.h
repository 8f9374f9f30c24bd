// The one Scheduler the controller runs, kept across cycles with its score memo and topology
// tree, and rebuilt only when what it is built from changes. Its configuration is fixed at
// start; with a queue tree (drf, drf-naive) the tree is built against the registered nodes'
// capacity, so the scheduler is rebuilt when that capacity changes. When the tree does not fit
// the registered capacity, the last tree that fitted stays in use (none: no cycle runs) and the
// problem is logged once and reported by problem().
//
// Thread-safety: none; used by one scheduling cycle at a time.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "core/resources.h"
#include "core/status.h"
#include "sched/scheduler.h"
#include "server/controller_options.h"

namespace tessera {

class LiveScheduler {
 public:
  explicit LiveScheduler(const ControllerOptions& options);

  // The scheduler for a cluster of `capacity`, or the error that keeps it from running.
  Result<const Scheduler*> For(const Resources& capacity);

  // Under drf: the tree in use (null before one fitted).
  std::shared_ptr<const QueueTree> queue_tree() const { return tree_; }
  // Why the scheduler cannot run as configured now; empty when it can.
  const std::string& problem() const { return problem_; }
  // How many times the Scheduler was built (tests, /v1/status).
  int builds() const { return builds_; }

 private:
  // Rebuilds the queue tree for `capacity` when that changed. Returns whether a tree is in use.
  bool RefreshQueueTree(const Resources& capacity);
  void SetProblem(std::string problem);

  SchedulerConfig config_;
  std::optional<QueueTreeSpec> queues_;
  std::string queues_source_;
  std::shared_ptr<const QueueTree> tree_;
  std::optional<Resources> tried_capacity_;  // the capacity the tree was last built for
  std::optional<Scheduler> scheduler_;
  std::string problem_;
  int builds_ = 0;
};

}  // namespace tessera
