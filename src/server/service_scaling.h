// Autoscaled InferenceServices live (docs/autoscaling.md). An autoscaled service has one unit
// per replica it may have (spec.replicas.max); the controller keeps how many it wants
// (ServiceScale::desired) and:
//   - the scheduling cycle starts pending replicas only while fewer than that run
//     (FreeReplicaSlots, the lowest unit first);
//   - each autoscale tick (Controller::AutoscaleLoop) reads the replicas' signals outside the
//     lock (service_signals.h), asks the autoscaler (sched/autoscale/) for the count, and, under
//     the lock, drains the highest running replicas beyond it: a draining replica is left out
//     of the gateway's set (its tasks carry "draining": true in the job's detail), and once
//     nothing is in flight on it (or the drain timeout passed) it is stopped back to Pending,
//     where it waits until the service grows again. Growing first takes back draining replicas.
//
// Thread-safety: none; everything that takes ControllerState runs under ControllerCore's mutex.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/metrics_text.h"
#include "server/controller_core.h"
#include "server/service_signals.h"

namespace tessera {

bool IsAutoscaled(const JobState& job);

// How many more of `job`'s pending replicas may start now (a large number when the job is not
// an autoscaled service).
int FreeReplicaSlots(const ControllerState& state, const JobState& job);

struct ScaleTarget {
  struct Replica {
    int unit = 0;
    std::string url;  // http://address:port, as the gateway finds it
    bool draining = false;
  };
  std::int64_t job_id = 0;
  std::string service;            // queue/name, the gateway's name of it
  std::vector<Replica> replicas;  // units running, with the task that serves
};

// The autoscaled services and their running replicas, to read signals from outside the lock.
std::vector<ScaleTarget> ScaleTargets(const ControllerState& state);
// service -> its replicas' URLs.
std::map<std::string, std::vector<std::string>> ReplicaUrls(
    const std::vector<ScaleTarget>& targets);

// What the replicas (and the gateway) report, as one sample of the service's metric: the
// serving replicas that answered; in-flight from the gateway where it counts the replica,
// else the engine's running + waiting; requests the gateway holds for want of a replica count
// as in flight and as waiting (scale from zero); TTFT p90 ÷ spec.slo.ttftMs.
AutoscaleSample ServiceSample(const JobSpec& spec, const ScaleTarget& target,
                              const ServiceSignals& signals, Tick now);

// GET /metrics: tessera_service_replicas{service, state=desired|serving|draining} of every
// autoscaled service, and the last sample's value (tessera_service_autoscale_metric{service,
// metric}).
struct ServiceScaleGauge {
  std::string service;
  std::string metric;
  int desired = 0, serving = 0, draining = 0;
  double value = 0;
};
std::vector<ServiceScaleGauge> ScaleGaugesLocked(const ControllerState& state);
void WriteScaleGauges(const std::vector<ServiceScaleGauge>& gauges, MetricsWriter& out);

struct DrainOptions {
  Tick min_ms = 1000;       // at least this long out of the gateway's set before it is stopped
  Tick timeout_ms = 60000;  // stopped after this long even with requests in flight
};

// One autoscale tick's decisions for `targets`, from `signals`, applied in one commit.
Status ApplyScalingLocked(ControllerCore& core, const std::vector<ScaleTarget>& targets,
                          const std::map<std::string, ServiceSignals>& signals,
                          const DrainOptions& drain);

}  // namespace tessera
