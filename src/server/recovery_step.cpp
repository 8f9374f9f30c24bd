#include "server/recovery_step.h"

#include <spdlog/spdlog.h>

#include "server/decision_applier.h"
#include "server/recovery_planner.h"

namespace tessera {

Status CheckSparesFitLocked(const ControllerState& state, const ControllerOptions& options) {
  if (options.spares_per_domain <= 0 || state.nodes.empty()) return {};
  const CycleCluster cluster = BuildCycleCluster(state, options.topology_levels);
  return CheckSparesFit(BuildRecoveryTopology(*cluster.cluster), *cluster.cluster,
                        options.spares_per_domain, "--spares-per-domain");
}

const RecoveryTopology& RecoveryStep::TopologyOf(const CycleCluster& cluster) {
  if (topology_generation_ != cluster.generation || topology_.leaf_of.empty()) {
    topology_ = BuildRecoveryTopology(*cluster.cluster);
    topology_generation_ = cluster.generation;
  }
  return topology_;
}

int RecoveryStep::RecoverLocked(const CycleCluster& cluster, std::uint64_t seed,
                                const std::shared_ptr<std::uint64_t>& versions,
                                const std::set<std::int64_t>* jobs) {
  ControllerState& state = core_.state;
  const auto candidates = FindRecoveryCandidates(state, cluster, core_.options().recovery, jobs);
  if (candidates.empty()) return 0;
  const Tick now = core_.Now();
  const CycleSnapshot snapshot = BuildCycleSnapshot(state, cluster, now, seed, versions);
  const RecoveryPlan plan = PlanRecoveries(candidates, *snapshot.working, cluster,
                                           TopologyOf(cluster), core_.options().spares_per_domain);
  for (const auto& why : plan.left_to_scheduler)
    spdlog::info("recovery left to the scheduler: {}", why);
  if (plan.binds.empty()) return 0;
  ChangeBuilder change(state);
  const AppliedDecisions applied = ApplyDecisions(snapshot, plan.binds, change, now, port_salt_);
  for (const auto& why : applied.not_applied) spdlog::info("recovery: {}", why);
  for (std::size_t i = 0; i < plan.events.size(); ++i) {
    const JobState& job = state.jobs.at(plan.events[i].job_id);
    const SnapshotUnit* unit = snapshot.UnitOf(plan.binds[i].job);
    if (unit == nullptr) continue;
    if (change.Unit(job, unit->unit).phase != UnitPhase::kRunning) continue;
    change.Event("JobRecovering", JobObject(job.rec), plan.events[i].message);
  }
  if (auto s = core_.CommitLocked(change); !s) {
    spdlog::error("recovery binds not committed: {}", s.error().message);
    return 0;
  }
  return applied.bound;
}

int RecoveryStep::HoldSpares(CycleSnapshot& snapshot) {
  const int per_domain = core_.options().spares_per_domain;
  if (per_domain <= 0) return 0;
  const SparePool pool = ChooseSpares(TopologyOf(snapshot.cluster), *snapshot.working, per_domain);
  for (std::size_t n = 0; n < pool.is_spare.size(); ++n) {
    if (pool.is_spare[n])
      snapshot.working->SetHealthy(NodeId(static_cast<std::uint32_t>(n)), false);
  }
  return pool.count;
}

}  // namespace tessera
