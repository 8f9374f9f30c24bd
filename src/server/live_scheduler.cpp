#include "server/live_scheduler.h"

#include <spdlog/spdlog.h>

#include "sched/queue/queue_policy.h"

namespace tessera {

Result<std::set<std::string>> CheckControllerOptions(const ControllerOptions& options) {
  SchedulerConfig check = options.scheduler;
  std::set<std::string> leaves;
  if (options.spares_per_domain < 0 || options.spares_per_domain > 1000) {
    return InvalidArgument("--spares-per-domain: must be 0..1000, got " +
                           std::to_string(options.spares_per_domain));
  }
  const bool fair_share = IsFairSharePolicy(options.scheduler.queue_policy);
  if (fair_share && !options.queues) {
    return InvalidArgument("queue policy '" + options.scheduler.queue_policy +
                           "' needs a queue tree (--queues FILE; see docs/quotas.md)");
  }
  if (!fair_share && options.queues) {
    return InvalidArgument("--queues: needs queue policy drf or drf-naive, not '" +
                           options.scheduler.queue_policy + "'");
  }
  if (options.queues) {
    // Its shape checked now, against a cluster large enough for any absolute guarantee; the
    // live scheduler builds it against the nodes that have registered.
    constexpr std::int64_t kAny = std::int64_t{1} << 40;
    auto tree = QueueTree::Build(*options.queues, Resources{kAny, kAny, kAny});
    if (!tree) return InvalidArgument(options.queues_source + ": " + tree.error().message);
    for (int leaf : tree->leaves()) leaves.insert(tree->node(leaf).path);
    check.queues = std::make_shared<const QueueTree>(std::move(*tree));
  }
  if (auto s = Scheduler::Create(check); !s) return std::unexpected(s.error());
  return leaves;
}

LiveScheduler::LiveScheduler(const ControllerOptions& options)
    : config_(options.scheduler), queues_(options.queues), queues_source_(options.queues_source) {
  // Live, a job that asks to be elastic is resized (server/resize_applier.h); jobs without
  // spec.elastic are not affected.
  config_.elastic = true;
}

void LiveScheduler::SetProblem(std::string problem) {
  if (problem != problem_ && !problem.empty()) spdlog::error("scheduler: {}", problem);
  if (problem.empty() && !problem_.empty()) spdlog::info("scheduler: running again");
  problem_ = std::move(problem);
}

bool LiveScheduler::RefreshQueueTree(const Resources& capacity) {
  if (tried_capacity_ && *tried_capacity_ == capacity) return tree_ != nullptr;
  tried_capacity_ = capacity;
  // Fractions of the cluster resolve against what has registered; absolute guarantees that
  // exceed it wait for more nodes (with the last tree that fitted, if any).
  auto tree = QueueTree::Build(*queues_, capacity);
  if (!tree) {
    SetProblem("queue tree " + queues_source_ + " does not fit the " +
               std::to_string(capacity.gpu_milli / kMilliPerGpu) +
               " registered GPUs: " + tree.error().message);
    return tree_ != nullptr;
  }
  tree_ = std::make_shared<const QueueTree>(std::move(*tree));
  scheduler_.reset();  // built again with the new tree
  SetProblem("");
  return true;
}

Result<const Scheduler*> LiveScheduler::For(const Resources& capacity) {
  if (queues_ && !RefreshQueueTree(capacity)) return FailedPrecondition(problem_);
  if (!scheduler_) {
    SchedulerConfig config = config_;
    config.queues = tree_;
    auto built = Scheduler::Create(config);
    if (!built) {
      SetProblem("cannot be built: " + built.error().message);
      return FailedPrecondition(problem_);
    }
    scheduler_.emplace(std::move(*built));
    ++builds_;
  }
  return &*scheduler_;
}

}  // namespace tessera
