// What a controller is configured with (tesserad's flags), and the check of it that
// Controller::Create runs before anything starts.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/queue_tree_spec.h"
#include "core/recovery_mode.h"
#include "core/status.h"
#include "core/time.h"
#include "sched/scheduler.h"

namespace tessera {

struct ControllerOptions {
  Tick heartbeat_interval_ms = 1000;  // agents' cadence; also their long-poll wait
  Tick heartbeat_timeout_ms = 10000;  // silence after which a node is Lost
  Tick schedule_interval_ms = 1000;   // at most this long between cycles when idle
  Tick min_cycle_gap_ms = 5;          // bursts of changes share a cycle
  SchedulerConfig scheduler;          // queue policy fifo, placement bestfit by default
  // Hierarchical quotas (queue policies drf and drf-naive, and only those): the queue tree as
  // read from `tesserad --queues FILE`. It is built against the registered nodes' capacity
  // (rebuilt when that changes); jobs must name one of its leaf queues.
  std::optional<QueueTreeSpec> queues;
  std::string queues_source;  // the file, for messages
  // Topology levels, outermost first (`tesserad --topology-levels spine,leaf`): every node
  // registers its domain at each (`tessera-agent --topology spine=s1,leaf=l3`); none = flat.
  std::vector<std::string> topology_levels;
  // How gangs recover from a lost or drained node unless their spec says (`tesserad
  // --recovery`, recovery_planner.h); requeue hands the gang back to the scheduler.
  RecoveryMode recovery = RecoveryMode::kRequeue;
  // Idle spare nodes held back in every leaf domain for recovery (`--spares-per-domain`);
  // the scheduler never places ordinary work on them. 0 = no pool.
  int spares_per_domain = 0;
  std::size_t events_in_memory = 20000;
  std::function<Tick()> now;  // wall clock in ms since the epoch unless set (tests)
};

// Checks options as Controller::Create does (the scheduler's config; the queue tree's shape
// with drf and drf-naive, which need one and are the only ones that take one); returns the
// tree's leaf queues (none without a tree).
Result<std::set<std::string>> CheckControllerOptions(const ControllerOptions& options);

}  // namespace tessera
