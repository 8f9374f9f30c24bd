#include "server/decision_metrics.h"

namespace tessera {

void RecordDecisionMetricsLocked(ControllerCore& core, const CycleSnapshot& snapshot,
                                 const Decisions& decisions, const AppliedDecisions& applied,
                                 Tick now) {
  ControllerMetrics& metrics = core.metrics;
  if (!metrics.enabled()) return;
  metrics.Decided(decisions, applied);
  if (applied.bound == 0) return;
  for (const Decision& d : decisions) {
    if (d.kind != Decision::Kind::kBind) continue;
    const SnapshotUnit* found = snapshot.UnitOf(d.job);
    if (found == nullptr) continue;
    const SnapshotUnit& u = *found;
    auto it = core.state.jobs.find(u.job_id);
    if (it == core.state.jobs.end()) continue;
    const JobState& job = it->second;
    if (static_cast<std::size_t>(u.unit) >= job.units.size()) continue;
    const UnitRecord& unit = job.units[static_cast<std::size_t>(u.unit)];
    // Bound by this cycle: running, started now, one attempt past what the snapshot saw.
    if (unit.phase != UnitPhase::kRunning || unit.started_ms != now ||
        unit.attempt != u.attempt + 1)
      continue;
    const Tick since = unit.attempt == 1 ? job.rec.submit_ms : unit.pending_since_ms;
    metrics.Bound(job.rec.queue, static_cast<double>(now - since) / 1000.0);
  }
}

}  // namespace tessera
