// The rows of GET /v1/queues (`tessera get queues`). With a queue tree (tesserad --queues,
// under drf or drf-naive) every queue of the tree is shown from the start, parents before
// their children, whether or not a job has named it: guaranteed GPUs and borrowing limit (as
// built against the registered nodes), GPUs allocated, dominant share, and pending, active and
// finished jobs (an inner queue's figures are its subtree's). Queues that jobs named outside
// the tree, and every queue without a tree, follow as flat rows.
//
// Fields of a row: name (the path), pendingJobs, activeJobs, finishedJobs, gpusAllocated,
// pendingGpus, dominantShare (the largest of GPUs, CPU and memory allocated ÷ the registered
// capacity, as DRF defines it); with a tree also parent, depth, leaf, weight, priority and,
// once the tree resolves against the registered capacity, guaranteedGpus, entitlement and
// borrowLimitGpus (absent when unlimited).
//
// Pure: built from values the controller gathers under its lock.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/resources.h"
#include "sched/quota/queue_tree.h"

namespace tessera {

// What one queue holds now.
struct QueueUsage {
  int pending_jobs = 0;
  int active_jobs = 0;  // running, stopping or restarting
  int finished_jobs = 0;
  Resources allocated;                 // of its live tasks
  std::int64_t pending_gpu_milli = 0;  // GPUs its pending jobs ask for
};

// `tree`: the queue tree as configured (null without one); `built`: the tree the last
// scheduling cycle built (null when none has yet), reused when it was built against
// `capacity` (the registered nodes'). `usage` is by queue path; paths the tree lacks become
// flat rows.
nlohmann::json QueueRows(const QueueTreeSpec* tree, const QueueTree* built,
                         const Resources& capacity, const std::map<std::string, QueueUsage>& usage);

}  // namespace tessera
