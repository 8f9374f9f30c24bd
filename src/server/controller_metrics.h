// The controller's counters and histograms for GET /metrics: scheduling cycles and their
// decisions, submit-to-bind latency, preemption victims, store commits and API requests. The
// parts that do the work report here; the gauges (jobs, queues, nodes) are gathered from the
// state when scraped (metrics_view.h).
//
// It has its own small mutex, never the controller's: reporting costs a few increments, and a
// scrape holds it only to copy these counters (the text is written from the copy), so that a
// cycle reporting its binds under the controller's lock never waits for a scrape's formatting.
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "core/metrics_text.h"
#include "sched/decision.h"

namespace tessera {

struct AppliedDecisions;

class ControllerMetrics {
 public:
  // Off: every report is ignored (for the benchmark of the cycle with metrics off).
  void set_enabled(bool on) { enabled_.store(on, std::memory_order_relaxed); }
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }

  // One scheduling cycle: its wall time and how long of it the controller's lock was held.
  void Cycle(double seconds, double locked_seconds);
  // A cycle that had pending work: kept among the last kRecentCycles such cycles, whose median
  // and 99th percentile /metrics shows (tessera_scheduling_cycle_recent_seconds).
  void PendingCycle(double seconds);
  static constexpr std::size_t kRecentCycles = 4096;
  // What the scheduler decided in a cycle (every decision, by kind) and what of it was applied
  // (preempted units are the victims; deferred and dropped decisions by why).
  void Decided(const Decisions& decisions, const AppliedDecisions& applied);
  // A unit bound `wait_seconds` after it was submitted (or requeued), in `queue`.
  void Bound(const std::string& queue, double wait_seconds);
  void StoreCommit(double seconds, bool ok);
  // One API request: `route` is the route's pattern (bounded), never the raw path; `seconds`
  // its latency when known, of which it waited `lock_wait_seconds` for the controller's lock.
  void Request(std::string_view method, std::string_view route, int code,
               std::optional<double> seconds, double lock_wait_seconds = 0);

  void Write(MetricsWriter& out) const;

 private:
  // Everything reported, copied whole by a scrape.
  struct Recorded {
    Recorded();
    Histogram cycle_seconds;
    Histogram cycle_locked_seconds;
    std::vector<double> recent_pending_cycles;  // a ring of kRecentCycles
    std::size_t recent_next = 0;
    std::map<std::string, std::int64_t> decisions;  // by kind
    std::int64_t victims = 0, deferred = 0, dropped = 0;
    std::map<std::string, Histogram> bind_wait;  // by queue
    Histogram commit_seconds;
    std::int64_t commit_failures = 0;
    using Route = std::pair<std::string, std::string>;  // (method, route)
    std::map<Route, Histogram> request_seconds;
    std::map<Route, Histogram> request_lock_wait_seconds;
    std::map<std::tuple<std::string, std::string, int>, std::int64_t> requests;
  };
  static void WriteRecorded(const Recorded& r, MetricsWriter& out);

  std::atomic<bool> enabled_{true};
  mutable std::mutex mu_;
  Recorded r_;  // under mu_
};

// The name of a decision kind as the metrics label it: bind, preempt, unschedulable, resize.
std::string_view DecisionKindLabel(Decision::Kind kind);

// The route of an API path, with its variable parts replaced: /v1/jobs/{job},
// /v1/agents/{node}/heartbeat, ...; "other" for a path that is no route, so that the label
// stays bounded whatever clients send.
std::string ApiRouteLabel(std::string_view path);

}  // namespace tessera
