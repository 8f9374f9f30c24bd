#include "server/service_scaling.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "server/job_views.h"
#include "server/unit_lifecycle.h"
#include "spec/protocol.h"

namespace tessera {

namespace {

// A figure for event messages: "2.5", "0.82", "17".
std::string Figure(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

AutoscalerConfig ConfigOf(const JobSpec& spec) {
  AutoscalerConfig c;
  c.spec = *spec.autoscaling;
  c.min_replicas = spec.replicas_min;
  c.max_replicas = spec.replicas_max;
  return c;
}

int BusyUnits(const JobState& job) {
  int busy = 0;
  for (const auto& u : job.units)
    busy += u.phase == UnitPhase::kRunning || u.phase == UnitPhase::kStopping;
  return busy;
}

// The autoscaler's state of `job`, made on first use: it wants min replicas, or those running.
ServiceScale& ScaleOf(ControllerState& state, const JobState& job) {
  auto [it, added] = state.scaling.try_emplace(job.rec.id);
  if (added) {
    it->second.autoscaler.emplace(ConfigOf(job.spec));
    it->second.desired = std::max(job.spec.replicas_min, BusyUnits(job));
  }
  return it->second;
}

double InFlightOn(const ServiceSignals& signals, const std::string& url, bool& answered) {
  auto it = signals.replicas.find(url);
  answered = it != signals.replicas.end() && it->second.answered;
  if (!answered) return 0;
  // The gateway leaves a draining replica out of its set, so the engine's own count is what
  // is left once the gateway no longer lists it.
  return std::max(it->second.gateway_in_flight.value_or(0),
                  it->second.running + it->second.waiting);
}

struct ServiceDecision {
  std::vector<int> drain, keep;                   // units to start and to stop draining
  std::vector<std::pair<int, std::string>> stop;  // drained units to stop, and why
};

// Which running replicas drain, which draining ones are kept, which drained ones stop.
ServiceDecision DecideDrains(const JobState& job, const ServiceScale& scale,
                             const ScaleTarget& target, const ServiceSignals& signals,
                             const DrainOptions& drain, Tick now) {
  ServiceDecision d;
  std::vector<int> serving, draining;
  for (const auto& u : job.units) {
    if (u.phase != UnitPhase::kRunning) continue;
    (scale.draining.contains(u.unit) ? draining : serving).push_back(u.unit);
  }
  const int excess = static_cast<int>(serving.size()) - scale.desired;
  for (int i = 0; i < excess; ++i) d.drain.push_back(serving[serving.size() - 1 - i]);
  for (int i = 0; i < -excess && i < static_cast<int>(draining.size()); ++i)
    d.keep.push_back(draining[i]);
  for (const ScaleTarget::Replica& r : target.replicas) {
    auto since = scale.draining.find(r.unit);
    if (since == scale.draining.end() || std::ranges::count(d.keep, r.unit) > 0) continue;
    bool answered = false;
    const double in_flight = InFlightOn(signals, r.url, answered);
    const Tick age = now - since->second;
    if (age >= drain.min_ms && answered && in_flight <= 0) {
      d.stop.emplace_back(r.unit, "scaled in: replica " + std::to_string(r.unit) +
                                      " drained (no request in flight)");
    } else if (age >= drain.timeout_ms) {
      d.stop.emplace_back(r.unit, "scaled in: replica " + std::to_string(r.unit) +
                                      " stopped after a drain of " +
                                      std::to_string(drain.timeout_ms / 1000) + " s with " +
                                      Figure(in_flight) + " request(s) in flight");
    }
  }
  return d;
}

}  // namespace

bool IsAutoscaled(const JobState& job) {
  return job.spec.kind == WorkloadKind::kInference && job.spec.autoscaling.has_value();
}

AutoscaleSample ServiceSample(const JobSpec& spec, const ScaleTarget& target,
                              const ServiceSignals& signals, Tick now) {
  AutoscaleSample s;
  s.at = now;
  double kv_sum = 0;
  for (const ScaleTarget::Replica& r : target.replicas) {
    if (r.draining) continue;
    auto it = signals.replicas.find(r.url);
    if (it == signals.replicas.end() || !it->second.answered) continue;
    const ReplicaSignal& sig = it->second;
    ++s.replicas;
    switch (spec.autoscaling->metric) {
      case AutoscaleMetric::kInFlightRequests:
        s.value += sig.gateway_in_flight.value_or(sig.running + sig.waiting);
        break;
      case AutoscaleMetric::kQueueLength:
        s.value += sig.waiting;
        break;
      case AutoscaleMetric::kKvCacheUtilization:
        kv_sum += sig.kv_usage;
        break;
      case AutoscaleMetric::kTtftP90:
        break;
    }
  }
  // Requests the gateway holds for want of a replica: in flight as far as the service is
  // concerned, and what scales it from zero.
  s.waiting = signals.awaiting_replica;
  if (IsSummedMetric(spec.autoscaling->metric)) s.value += signals.awaiting_replica;
  if (spec.autoscaling->metric == AutoscaleMetric::kKvCacheUtilization && s.replicas > 0)
    s.value = kv_sum / s.replicas;
  if (spec.autoscaling->metric == AutoscaleMetric::kTtftP90) {
    // No request finished its prefill since the last tick: nothing to say about the latency.
    if (!signals.ttft_p90_ms || spec.slo_latency_ms <= 0) s.replicas = 0;
    s.value = signals.ttft_p90_ms.value_or(0) / std::max(1, spec.slo_latency_ms);
  }
  return s;
}

int FreeReplicaSlots(const ControllerState& state, const JobState& job) {
  if (!IsAutoscaled(job)) return std::numeric_limits<int>::max();
  auto it = state.scaling.find(job.rec.id);
  const int busy = BusyUnits(job);
  const int desired =
      it != state.scaling.end() ? it->second.desired : std::max(job.spec.replicas_min, busy);
  return std::max(0, desired - busy);
}

bool IsDrainingTask(const ControllerState& state, const TaskRecord& task) {
  auto it = state.scaling.find(task.job_id);
  if (it == state.scaling.end() || !it->second.draining.contains(task.unit)) return false;
  const JobState& job = state.jobs.at(task.job_id);
  return task.unit < static_cast<int>(job.units.size()) &&
         job.units[task.unit].attempt == task.attempt;
}

std::vector<ScaleTarget> ScaleTargets(const ControllerState& state) {
  std::vector<ScaleTarget> out;
  for (auto id : state.autoscaled) {
    const JobState& job = state.jobs.at(id);
    ScaleTarget t;
    t.job_id = id;
    t.service = job.rec.queue + "/" + job.rec.name;
    auto scale = state.scaling.find(id);
    for (auto tid : job.tasks) {
      const TaskRecord& task = state.tasks.at(tid);
      const UnitRecord& unit = job.units.at(task.unit);
      if (unit.phase != UnitPhase::kRunning || unit.attempt != task.attempt ||
          task.state != TaskState::kRunning)
        continue;
      t.replicas.push_back(
          {task.unit, ReplicaEndpoint(state, task),
           scale != state.scaling.end() && scale->second.draining.contains(task.unit)});
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::map<std::string, std::vector<std::string>> ReplicaUrls(
    const std::vector<ScaleTarget>& targets) {
  std::map<std::string, std::vector<std::string>> out;
  for (const ScaleTarget& t : targets) {
    auto& urls = out[t.service];
    for (const auto& r : t.replicas) urls.push_back(r.url);
  }
  return out;
}

Status ApplyScalingLocked(ControllerCore& core, const std::vector<ScaleTarget>& targets,
                          const std::map<std::string, ServiceSignals>& signals,
                          const DrainOptions& drain) {
  ControllerState& state = core.state;
  std::erase_if(state.scaling, [&](const auto& kv) { return !state.active.contains(kv.first); });
  const Tick now = core.Now();
  ChangeBuilder change(state);
  struct Pending {
    std::int64_t job_id;
    int desired;
    ServiceDecision decision;
  };
  std::vector<Pending> decided;
  static const ServiceSignals kNone;
  for (const ScaleTarget& target : targets) {
    auto jit = state.jobs.find(target.job_id);
    if (jit == state.jobs.end() || !state.active.contains(target.job_id) ||
        !IsAutoscaled(jit->second))
      continue;
    const JobState& job = jit->second;
    ServiceScale& scale = ScaleOf(state, job);
    // A draining replica that stopped on its own (it failed, its node was lost) drains no more:
    // its next attempt is a fresh replica.
    std::erase_if(scale.draining, [&](const auto& kv) {
      return kv.first >= static_cast<int>(job.units.size()) ||
             job.units[static_cast<std::size_t>(kv.first)].phase != UnitPhase::kRunning;
    });
    auto sit = signals.find(target.service);
    const ServiceSignals& sig = sit != signals.end() ? sit->second : kNone;
    const AutoscaleSample sample = ServiceSample(job.spec, target, sig, now);
    scale.last_value = sample.value;
    scale.last_measured = sample.replicas;
    const int before = scale.desired;
    const int desired = scale.autoscaler->Desired(before, sample);
    const std::string object = JobObject(job.rec);
    if (desired != before) {
      change.Event("ServiceScaled", object,
                   "replicas " + std::to_string(before) + " -> " + std::to_string(desired) + ": " +
                       std::string(AutoscaleMetricName(job.spec.autoscaling->metric)) + " " +
                       Figure(sample.value) + " over " + std::to_string(sample.replicas) +
                       " replica(s), target " + Figure(job.spec.autoscaling->target) +
                       " per replica");
      if (desired > before) change.RequestSchedule();
    }
    ServiceScale probe = scale;
    probe.desired = desired;
    ServiceDecision d = DecideDrains(job, probe, target, sig, drain, now);
    for (int u : d.drain)
      change.Event("ReplicaDraining", object,
                   "replica " + std::to_string(u) + " takes no new requests; it stops once idle");
    for (int u : d.keep)
      change.Event("ReplicaKept", object, "replica " + std::to_string(u) + " serves again");
    for (const auto& [u, why] : d.stop) StopUnit(change, job, u, UnitPhase::kPending, why, now);
    decided.push_back({target.job_id, desired, std::move(d)});
  }
  bool anything = false;
  for (const Pending& p : decided) {
    anything |= p.desired != state.scaling.at(p.job_id).desired || !p.decision.drain.empty() ||
                !p.decision.keep.empty() || !p.decision.stop.empty();
  }
  if (anything) {
    if (auto s = core.CommitLocked(change); !s) return s;
  }
  for (const Pending& p : decided) {
    ServiceScale& scale = state.scaling.at(p.job_id);
    scale.desired = p.desired;
    for (int u : p.decision.drain) scale.draining[u] = now;
    for (int u : p.decision.keep) scale.draining.erase(u);
    for (const auto& [u, why] : p.decision.stop) scale.draining.erase(u);
  }
  return {};
}

std::vector<ServiceScaleGauge> ScaleGaugesLocked(const ControllerState& state) {
  std::vector<ServiceScaleGauge> out;
  for (const auto& [id, scale] : state.scaling) {
    auto jit = state.jobs.find(id);
    if (jit == state.jobs.end() || !IsAutoscaled(jit->second)) continue;
    const JobState& job = jit->second;
    ServiceScaleGauge g;
    g.service = job.rec.queue + "/" + job.rec.name;
    g.metric = std::string(AutoscaleMetricName(job.spec.autoscaling->metric));
    g.desired = scale.desired;
    g.draining = static_cast<int>(scale.draining.size());
    for (const auto& u : job.units) g.serving += u.phase == UnitPhase::kRunning;
    g.serving -= g.draining;
    g.value = scale.last_value;
    out.push_back(std::move(g));
  }
  return out;
}

void WriteScaleGauges(const std::vector<ServiceScaleGauge>& gauges, MetricsWriter& out) {
  out.Family("tessera_service_replicas", MetricType::kGauge,
             "Autoscaled InferenceServices' replicas: wanted, serving, draining.");
  for (const auto& g : gauges) {
    out.Sample({{"service", g.service}, {"state", "desired"}}, g.desired);
    out.Sample({{"service", g.service}, {"state", "serving"}}, g.serving);
    out.Sample({{"service", g.service}, {"state", "draining"}}, g.draining);
  }
  out.Family("tessera_service_autoscale_metric", MetricType::kGauge,
             "The autoscaler's last sample of the service's metric (docs/autoscaling.md).");
  for (const auto& g : gauges) out.Sample({{"service", g.service}, {"metric", g.metric}}, g.value);
}

}  // namespace tessera
