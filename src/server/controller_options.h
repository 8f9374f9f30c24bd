// What a controller is configured with (tesserad's flags), and the check of it that
// Controller::Create runs before anything starts.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
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
  bool metrics = true;  // GET /metrics and what feeds it (off: for the benchmark of its cost)
  Tick metrics_gather_interval_ms = 1000;  // scrapes closer than this share one gathering
  // Autoscaled InferenceServices (service_scaling.h): how often their signals are read and
  // the autoscaler asked (`--autoscale-interval-ms`; HPA's sync period is 15 s, a replica here
  // starts in about a second); the gateway whose in-flight counts per replica and TTFT
  // histogram it reads (`--gateway URL`; none: the replicas' own /metrics only); a drain's
  // least and longest time.
  Tick autoscale_interval_ms = 1000;
  std::string gateway_url;
  Tick drain_min_ms = 1000;
  Tick drain_timeout_ms = 60000;
  // The GPU usage agents report is kept per task over this window (gpu_usage_feed.h; the
  // simulator's usage_window_seconds, 10 minutes by default).
  Tick usage_window_ms = 600000;
  std::function<Tick()> now;  // wall clock in ms since the epoch unless set (tests)
  // GET /v1/controllers: every controller of this cluster, [{url, pid, leader}] (tesserad
  // fills it: itself alone on SQLite, etcd's registrations on etcd); unset: [].
  std::function<nlohmann::json()> controllers;
};

// Checks options as Controller::Create does (the scheduler's config; the queue tree's shape
// with drf and drf-naive, which need one and are the only ones that take one); returns the
// tree's leaf queues (none without a tree).
Result<std::set<std::string>> CheckControllerOptions(const ControllerOptions& options);

}  // namespace tessera
