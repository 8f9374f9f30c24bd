#include "server/controller_metrics.h"

#include <algorithm>
#include <array>
#include <vector>

#include "core/percentile.h"
#include "server/decision_applier.h"

namespace tessera {

ControllerMetrics::Recorded::Recorded()
    : cycle_seconds(kLatencyBucketsSeconds),
      cycle_locked_seconds(kLatencyBucketsSeconds),
      commit_seconds(kLatencyBucketsSeconds) {}

std::string_view DecisionKindLabel(Decision::Kind kind) {
  switch (kind) {
    case Decision::Kind::kBind:
      return "bind";
    case Decision::Kind::kPreempt:
      return "preempt";
    case Decision::Kind::kUnschedulable:
      return "unschedulable";
    case Decision::Kind::kResize:
      return "resize";
  }
  return "other";
}

void ControllerMetrics::Cycle(double seconds, double locked_seconds) {
  if (!enabled()) return;
  std::lock_guard lock(mu_);
  r_.cycle_seconds.Observe(seconds);
  r_.cycle_locked_seconds.Observe(locked_seconds);
}

void ControllerMetrics::PendingCycle(double seconds) {
  if (!enabled()) return;
  std::lock_guard lock(mu_);
  if (r_.recent_pending_cycles.size() < kRecentCycles) {
    r_.recent_pending_cycles.push_back(seconds);
  } else {
    r_.recent_pending_cycles[r_.recent_next] = seconds;
    r_.recent_next = (r_.recent_next + 1) % kRecentCycles;
  }
}

void ControllerMetrics::Decided(const Decisions& decisions, const AppliedDecisions& applied) {
  if (!enabled()) return;
  // Counted by the enum, not looked up by name: a cycle may decide for 10,000 pending jobs, under
  // the controller's lock, and the count must not cost the cycle.
  constexpr std::array kAll = {Decision::Kind::kBind, Decision::Kind::kPreempt,
                               Decision::Kind::kUnschedulable, Decision::Kind::kResize};
  static_assert(static_cast<int>(Decision::Kind::kBind) == 0 &&
                static_cast<int>(Decision::Kind::kPreempt) == 1 &&
                static_cast<int>(Decision::Kind::kUnschedulable) == 2 &&
                static_cast<int>(Decision::Kind::kResize) == 3);  // kAll's order
  std::array<std::int64_t, kAll.size()> kinds{};
  for (const Decision& d : decisions) ++kinds[static_cast<std::size_t>(d.kind)];
  std::lock_guard lock(mu_);
  for (std::size_t i = 0; i < kAll.size(); ++i) {
    if (kinds[i] == 0) continue;
    r_.decisions[std::string(DecisionKindLabel(kAll[i]))] += kinds[i];
  }
  r_.victims += applied.preempted;
  r_.deferred += applied.deferred;
  r_.dropped += applied.dropped;
}

void ControllerMetrics::Bound(const std::string& queue, double wait_seconds) {
  if (!enabled()) return;
  std::lock_guard lock(mu_);
  r_.bind_wait.try_emplace(queue, kWaitBucketsSeconds).first->second.Observe(wait_seconds);
}

void ControllerMetrics::StoreCommit(double seconds, bool ok) {
  if (!enabled()) return;
  std::lock_guard lock(mu_);
  r_.commit_seconds.Observe(seconds);
  r_.commit_failures += ok ? 0 : 1;
}

void ControllerMetrics::Request(std::string_view method, std::string_view route, int code,
                                std::optional<double> seconds, double lock_wait_seconds) {
  if (!enabled()) return;
  std::lock_guard lock(mu_);
  ++r_.requests[{std::string(method), std::string(route), code}];
  if (!seconds) return;
  const Recorded::Route key{std::string(method), std::string(route)};
  r_.request_seconds.try_emplace(key, kLatencyBucketsSeconds).first->second.Observe(*seconds);
  r_.request_lock_wait_seconds.try_emplace(key, kLatencyBucketsSeconds)
      .first->second.Observe(lock_wait_seconds);
}

void ControllerMetrics::Write(MetricsWriter& out) const {
  std::unique_lock lock(mu_);
  const Recorded copy = r_;
  lock.unlock();
  WriteRecorded(copy, out);
}

void ControllerMetrics::WriteRecorded(const Recorded& r, MetricsWriter& out) {
  out.Family("tessera_scheduling_cycle_duration_seconds", MetricType::kHistogram,
             "Wall time of one scheduling cycle: snapshot, Schedule(), apply and commit.");
  out.Sample({}, r.cycle_seconds);
  out.Family("tessera_scheduling_cycle_recent_seconds", MetricType::kGauge,
             "Wall time of the last 4096 scheduling cycles that had pending work: the median "
             "(percentile 50) and the 99th percentile (a gauge, not a summary: no sum or count).");
  for (const auto& [label, p] : {std::pair{"50", 50.0}, std::pair{"99", 99.0}}) {
    out.Sample({{"percentile", label}}, Percentile(r.recent_pending_cycles, p));
  }
  out.Single("tessera_scheduling_cycle_recent_cycles", MetricType::kGauge,
             "Scheduling cycles in tessera_scheduling_cycle_recent_seconds (at most 4096).",
             static_cast<double>(r.recent_pending_cycles.size()));
  out.Family("tessera_scheduling_cycle_locked_seconds", MetricType::kHistogram,
             "Time of one scheduling cycle spent holding the controller's lock.");
  out.Sample({}, r.cycle_locked_seconds);
  out.Family("tessera_scheduling_decisions_total", MetricType::kCounter,
             "Decisions the scheduler made, by kind (bind, preempt, resize, unschedulable).");
  for (const char* kind : {"bind", "preempt", "resize", "unschedulable"})
    if (!r.decisions.contains(kind)) out.Sample({{"kind", kind}}, 0);
  for (const auto& [kind, n] : r.decisions) out.Sample({{"kind", kind}}, static_cast<double>(n));
  out.Family("tessera_scheduling_decisions_not_applied_total", MetricType::kCounter,
             "Decisions not applied because their subject changed during the cycle: deferred "
             "to a later cycle, or dropped.");
  out.Sample({{"reason", "deferred"}}, static_cast<double>(r.deferred));
  out.Sample({{"reason", "dropped"}}, static_cast<double>(r.dropped));
  out.Single("tessera_preemption_victims_total", MetricType::kCounter,
             "Running units stopped by a preemption decision.", static_cast<double>(r.victims));
  out.Family("tessera_job_scheduling_latency_seconds", MetricType::kHistogram,
             "Submit (or requeue) to bind of a unit, by queue.");
  for (const auto& [queue, h] : r.bind_wait) out.Sample({{"queue", queue}}, h);
  out.Family("tessera_store_commit_duration_seconds", MetricType::kHistogram,
             "Durable commit of one change to the store (SQLite: the transaction and its fsync).");
  out.Sample({}, r.commit_seconds);
  out.Single("tessera_store_commit_failures_total", MetricType::kCounter,
             "Commits the store refused or failed; memory was left as it was.",
             static_cast<double>(r.commit_failures));
  out.Family("tessera_api_requests_total", MetricType::kCounter,
             "API requests answered, by method, route and HTTP code.");
  for (const auto& [key, n] : r.requests) {
    const auto& [method, route, code] = key;
    out.Sample({{"method", method}, {"route", route}, {"code", std::to_string(code)}},
               static_cast<double>(n));
  }
  out.Family("tessera_api_request_duration_seconds", MetricType::kHistogram,
             "Time to answer an API request, by method and route (a long poll counts its wait).");
  for (const auto& [key, h] : r.request_seconds)
    out.Sample({{"method", key.first}, {"route", key.second}}, h);
  out.Family("tessera_api_request_lock_wait_seconds", MetricType::kHistogram,
             "Time an API request waited for the controller's lock, by method and route (the "
             "rest of its duration is its own work and the transfer).");
  for (const auto& [key, h] : r.request_lock_wait_seconds)
    out.Sample({{"method", key.first}, {"route", key.second}}, h);
}

namespace {

// Splits "/a/b/c" into its segments.
std::vector<std::string_view> Segments(std::string_view path) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '/') {
      ++i;
      continue;
    }
    const std::size_t end = std::min(path.find('/', i), path.size());
    out.push_back(path.substr(i, end - i));
    i = end;
  }
  return out;
}

}  // namespace

std::string ApiRouteLabel(std::string_view path) {
  if (auto q = path.find('?'); q != std::string_view::npos) path = path.substr(0, q);
  const auto s = Segments(path);
  if (s.size() == 1 && s[0] == "metrics") return "/metrics";
  if (s.size() < 2 || s[0] != "v1") return "other";
  const std::string_view top = s[1];
  if (s.size() == 2) {
    for (const char* known :
         {"healthz", "status", "jobs", "release", "nodes", "queues", "events", "usage"}) {
      if (top == known) return "/v1/" + std::string(top);
    }
    return "other";
  }
  // The dashboard's own listings (ui_routes.h).
  if (s.size() == 3 && top == "nodes" && s[2] == "changes") return "/v1/nodes/changes";
  if (s.size() == 3 && top == "queues" && s[2] == "history") return "/v1/queues/history";
  if (top == "jobs") return "/v1/jobs/{job}";
  if (top == "logs") return "/v1/logs/{job}";
  if (top == "exec") return "/v1/exec/{job}";
  if (top == "agents") {
    if (s.size() == 3) {
      if (s[2] == "register" || s[2] == "heartbeat" || s[2] == "status")
        return "/v1/agents/" + std::string(s[2]);
      return "other";
    }
    if (s.size() == 4 && s[3] == "heartbeat") return "/v1/agents/{node}/heartbeat";
    if (s.size() == 6 && s[3] == "tasks" && s[5] == "status")
      return "/v1/agents/{node}/tasks/{task}/status";
  }
  return "other";
}

}  // namespace tessera
