// Queue trees for the simulator (`tessera sim --queues FILE`, read by spec/queue_file.h), and
// the assignment of a trace's jobs to leaf queues. The format is documented in docs/quotas.md;
// examples/config/queues.yaml is one. Errors name the file, the key and the reason: "FILE: key
// 'queues[2].guaranteed.gpu': negative".
#pragma once

#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/resources.h"
#include "core/status.h"
#include "core/workload.h"
#include "sched/quota/queue_tree.h"
#include "spec/queue_file.h"

namespace tessera {

// Reads, parses and builds the tree against the cluster's capacity.
Result<QueueTree> LoadQueueTree(const std::string& path, const Resources& capacity);

// Sets each job's queue to the path of its leaf queue: the queue it names when that is a leaf
// of the tree, else the leaf listing its user, else the tree's unmatched rule. A job no rule
// places is an error naming it (and `source`).
Status AssignQueues(std::vector<Workload>& jobs, const QueueTree& tree, const std::string& source);

// A mapping file: CSV with the header `user,queue` or `job,queue` (job = the trace's job id),
// one row per user or job. Sets the queue of every matching job to that leaf's path, before
// AssignQueues applies the tree's own rules to the rest. Errors name the file and line.
Status ApplyQueueMap(std::vector<Workload>& jobs, const QueueTree& tree, const std::string& path);

// The default tree when no queue file is given: every queue the jobs name (a trace's users) is
// a leaf with an equal weight and an equal guaranteed share of the cluster.
QueueTree QueuePerUser(const std::vector<Workload>& jobs, const Resources& capacity);

}  // namespace tessera
