#include "server/recovery_planner.h"

#include <algorithm>

#include "sched/recovery/recovery_policy.h"

namespace tessera {

SparePool ChooseSpares(const RecoveryTopology& topology, const ClusterState& state,
                       int per_domain) {
  SparePool pool;
  pool.is_spare.assign(static_cast<std::size_t>(state.node_count()), 0);
  pool.by_leaf.resize(topology.leaf_nodes.size());
  if (per_domain <= 0) return pool;
  for (std::size_t l = 0; l < topology.leaf_nodes.size(); ++l) {
    const auto& nodes = topology.leaf_nodes[l];
    auto& spares = pool.by_leaf[l];
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      if (static_cast<int>(spares.size()) >= per_domain) break;
      const NodeState& s = state.node(*it);
      if (!s.healthy || s.tasks != 0) continue;
      spares.push_back(*it);
      pool.is_spare[it->value] = 1;
      ++pool.count;
    }
    std::sort(spares.begin(), spares.end());
  }
  return pool;
}

namespace {

bool NodeCanRun(const ControllerState& state, const std::string& name) {
  auto it = state.nodes.find(name);
  return it != state.nodes.end() && it->second.schedulable();
}

// The candidate of one pending unit, or nullopt when its last attempt ended for another reason
// (preempted, stopped by a cancel that was withdrawn) or is not a whole gang.
std::optional<RecoveryCandidate> CandidateOf(const ControllerState& state,
                                             const CycleCluster& cluster, const JobState& job,
                                             const UnitRecord& unit, RecoveryMode mode) {
  const auto& workload = job.unit_workloads[0];
  const int ranks = workload->TaskCount();
  std::vector<const TaskRecord*> by_rank(static_cast<std::size_t>(ranks), nullptr);
  for (auto tid : job.tasks) {
    const TaskRecord& t = state.tasks.at(tid);
    if (t.unit != unit.unit || t.attempt != unit.attempt || t.rank < 0 || t.rank >= ranks) continue;
    by_rank[static_cast<std::size_t>(t.rank)] = &t;
  }
  RecoveryCandidate c;
  c.job_id = job.rec.id;
  c.unit = unit.unit;
  c.mode = mode;
  c.workload = workload;
  bool failed_run = false;
  for (int r = 0; r < ranks; ++r) {
    const TaskRecord* t = by_rank[static_cast<std::size_t>(r)];
    // Oversold work is requeued for co-location to place on credit again (OnTaskFailed), not
    // bound by recovery onto GPUs of its own.
    if (t == nullptr || t->oversold) return std::nullopt;
    auto nid = cluster.ids.find(t->node);
    if (nid == cluster.ids.end()) return std::nullopt;
    c.placement.push_back(PlacementOfTask(*t, nid->second));
    failed_run |= t->state == TaskState::kLost || t->state == TaskState::kFailed;
    if (t->state == TaskState::kLost || !NodeCanRun(state, t->node)) {
      c.failed_ranks.push_back(r);
      c.failed_nodes.push_back(t->node);
    }
  }
  if (!failed_run && c.failed_ranks.empty()) return std::nullopt;
  return c;
}

std::string RankMoves(const RecoveryCandidate& c, const RecoveryDecision& d,
                      const CycleCluster& cluster) {
  std::string out;
  for (int r : d.replaced_ranks) {
    const auto i = static_cast<std::size_t>(r);
    out += (out.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r) + " " +
           cluster.node_names[c.placement[i].node.value] + " -> " +
           cluster.node_names[d.placement[i].node.value];
  }
  return out;
}

}  // namespace

std::vector<RecoveryCandidate> FindRecoveryCandidates(const ControllerState& state,
                                                      const CycleCluster& cluster,
                                                      RecoveryMode default_mode,
                                                      const std::set<std::int64_t>* jobs) {
  std::vector<RecoveryCandidate> out;
  for (auto id : jobs != nullptr ? *jobs : state.active) {
    if (jobs != nullptr && !state.active.contains(id)) continue;
    const JobState& job = state.jobs.at(id);
    if (job.spec.IndependentTasks() || job.unit_workloads.empty() || job.rec.held ||
        job.rec.cancel_requested || job.never_fits || !job.blocked_by.empty()) {
      continue;
    }
    const RecoveryMode mode = job.spec.recovery.value_or(default_mode);
    if (mode == RecoveryMode::kRequeue) continue;
    for (const auto& unit : job.units) {
      if (unit.phase != UnitPhase::kPending || unit.attempt == 0) continue;
      if (auto c = CandidateOf(state, cluster, job, unit, mode)) out.push_back(std::move(*c));
    }
  }
  return out;
}

RecoveryPlan PlanRecoveries(const std::vector<RecoveryCandidate>& candidates,
                            const ClusterState& working, const CycleCluster& cluster,
                            const RecoveryTopology& topology, int spares_per_domain) {
  RecoveryPlan plan;
  ClusterState base = working;  // with every recovery decided so far applied
  for (const RecoveryCandidate& c : candidates) {
    const std::string object = "job " + std::to_string(c.job_id);
    // The policy sees the gang's healthy ranks where they ran (their nodes busy).
    Placement healthy;
    for (std::size_t r = 0; r < c.placement.size(); ++r) {
      if (!std::binary_search(c.failed_ranks.begin(), c.failed_ranks.end(), static_cast<int>(r)))
        healthy.push_back(c.placement[r]);
    }
    ClusterState view_state = base;
    if (auto s = view_state.Apply(healthy); !s) {
      plan.left_to_scheduler.push_back(object + ": its healthy ranks' nodes are taken (" +
                                       s.error().message + ")");
      continue;
    }
    // The pool is out of reach of every gang but a `spares` one, which takes from it first.
    const SparePool pool = ChooseSpares(topology, view_state, spares_per_domain);
    RecoveryView view;
    view.state = &view_state;
    view.topology = &topology;
    if (spares_per_domain > 0) view.is_spare = &pool.is_spare;
    if (spares_per_domain > 0 && c.mode == RecoveryMode::kSpares)
      view.spares_by_leaf = &pool.by_leaf;
    auto policy = MakeRecoveryPolicy(RecoveryModeName(c.mode), RecoveryConfig{});
    if (!policy) continue;  // every RecoveryMode names a registered policy
    RecoveryRequest req{c.workload.get(), c.placement, c.failed_ranks,
                        static_cast<int>(c.placement.size())};
    const RecoveryDecision d = (*policy)->Decide(req, view);
    if (d.kind == RecoveryDecision::Kind::kWait || d.kind == RecoveryDecision::Kind::kResize) {
      plan.left_to_scheduler.push_back(object + ": " + d.reason);
      continue;
    }
    if (auto s = base.Apply(d.placement); !s) {
      plan.left_to_scheduler.push_back(object + ": " + s.error().message);
      continue;
    }
    Decision bind;
    bind.kind = Decision::Kind::kBind;
    bind.job = c.workload->id;
    bind.placement = d.placement;
    plan.binds.push_back(std::move(bind));
    std::string message = std::string(RecoveryModeName(c.mode)) + ": " + d.reason;
    if (const std::string moves = RankMoves(c, d, cluster); !moves.empty()) message += ": " + moves;
    plan.events.push_back({c.job_id, std::move(message)});
  }
  return plan;
}

}  // namespace tessera
