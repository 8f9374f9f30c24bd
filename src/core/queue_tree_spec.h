// The description of a queue tree as a user writes it (docs/quotas.md): queues with their
// parents, guaranteed quotas, borrowing limits, weights, priorities and users. Plain values:
// spec/queue_file.h reads them from YAML, sched/quota/queue_tree.h builds the tree from them.
#pragma once

#include <string>
#include <vector>

#include "core/time.h"

namespace tessera {

// An amount of one resource: absolute (GPUs, CPU cores, GiB of memory) or a fraction of the
// cluster's capacity ("25%" in YAML). Unset means: not given.
struct QuotaAmount {
  bool set = false;
  bool fraction = false;
  double value = 0;
};

struct QuotaSpec {
  QuotaAmount gpu, cpu, memory;
};

struct QueueSpec {
  std::string name;                // unique in the tree; [A-Za-z0-9._-]
  std::string parent;              // name of the parent queue; empty = under the root
  QuotaSpec guaranteed;            // unset = 0 (for a parent: the sum of its children)
  QuotaSpec borrow_limit;          // most it may use beyond its guarantee; unset = no limit
  double weight = 1;               // fair share among its siblings
  int priority = 0;                // a higher-priority sibling is served first
  std::vector<std::string> users;  // jobs of these users go to this (leaf) queue
};

struct QueueTreeSpec {
  std::vector<QueueSpec> queues;
  Tick reclaim_grace = 0;  // a borrowed job runs at least this long before it may be reclaimed
  // Where jobs whose user no leaf lists go: "" = an error, "hash" = a leaf picked by a hash of
  // the user (or of the job's name when it has no user), or the name of a leaf queue.
  std::string unmatched;
};

}  // namespace tessera
