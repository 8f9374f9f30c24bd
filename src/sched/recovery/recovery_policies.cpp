// The registered recovery policies (requeue, replace, spares, shrink) and the registry.
//  - requeue: give the whole gang back and place it again from scratch; every node starts cold.
//  - replace: keep the healthy ranks in place; move each failed rank to a free node as close as
//    possible (same leaf, then same spine, then anywhere), inside the gang's required domain.
//  - spares:  like replace, but take a hot spare first (warm: no provisioning), then a free node.
//  - shrink:  continue at once on the whole data-parallel replicas that survive; grow back at a
//    checkpoint when free nodes allow. Falls back to replace below the minimum size.
#include <algorithm>
#include <string>

#include "sched/recovery/recovery_policy.h"

namespace tessera {
namespace {

using Kind = RecoveryDecision::Kind;

RecoveryDecision InPlace(const RecoveryRequest& req) {
  RecoveryDecision d;
  d.kind = Kind::kReplace;
  d.placement = req.placement;
  d.reason = "restart in place (no node failed)";
  return d;
}

// The domain of the required level that the gang's healthy ranks sit in, or nullopt when the job
// requires none, the cluster has no such level, or no rank is healthy.
std::optional<std::uint32_t> GangDomain(const RecoveryRequest& req, const RecoveryView& view) {
  const std::string& level = req.job->topology.require;
  if (level.empty()) return std::nullopt;
  for (std::size_t r = 0; r < req.placement.size(); ++r) {
    if (std::binary_search(req.failed_ranks.begin(), req.failed_ranks.end(), static_cast<int>(r))) {
      continue;
    }
    return view.topology->DomainOf(view.state->cluster(), req.placement[r].node, level);
  }
  return std::nullopt;
}

bool AnyHealthy(const RecoveryRequest& req) {
  return req.failed_ranks.size() < req.placement.size();
}

// The whole gang on fresh nodes (the job's own healthy nodes count as free), or kWait.
RecoveryDecision WholeGang(const RecoveryRequest& req, const RecoveryView& view,
                           std::string_view why) {
  const int workers = static_cast<int>(req.placement.size());
  RecoveryDecision d;
  if (auto p = PlaceGangOnLeaves(*req.job, workers, *view.state, view, &req.placement)) {
    d.kind = Kind::kRequeue;
    d.placement = std::move(*p);
    d.reason =
        std::string(why) + "requeue the whole gang of " + std::to_string(workers) + " workers";
  } else {
    d.kind = Kind::kWait;
    d.reason = std::string(why) + "no room for the whole gang of " + std::to_string(workers) +
               " workers; wait";
  }
  return d;
}

// Moves each failed rank to a new node: a hot spare first when `use_spares`, else (or when no
// spare is left) a free node; near the failed node and inside the gang's required domain.
RecoveryDecision ReplaceFailed(const RecoveryRequest& req, const RecoveryView& view,
                               bool use_spares) {
  if (req.failed_ranks.empty()) return InPlace(req);
  if (!AnyHealthy(req)) return WholeGang(req, view, "every rank failed: ");
  const auto domain = GangDomain(req, view);
  RecoveryDecision d;
  d.kind = Kind::kReplace;
  d.placement = req.placement;
  std::vector<NodeId> taken;
  int off_leaf = 0;
  for (int r : req.failed_ranks) {
    const TaskShape& shape = req.job->ShapeOfTask(r);
    const NodeId failed = req.placement[static_cast<std::size_t>(r)].node;
    std::optional<NodeId> n;
    if (use_spares) {
      n = FindNodeNear(*req.job, shape, failed, domain, /*from_spares=*/true, taken, view);
      if (n) ++d.spares_used;
    }
    if (!n) n = FindNodeNear(*req.job, shape, failed, domain, /*from_spares=*/false, taken, view);
    if (!n) {
      // Nothing near enough for this rank. The whole gang may still fit in another domain of
      // the required level; otherwise wait for a repair.
      return WholeGang(req, view, "no node to replace rank " + std::to_string(r) + ": ");
    }
    off_leaf += view.topology->leaf(*n) != view.topology->leaf(failed);
    taken.push_back(*n);
    d.placement[static_cast<std::size_t>(r)] = TaskOn(*view.state, *n, shape);
    d.replaced_ranks.push_back(r);
  }
  const int n = static_cast<int>(d.replaced_ranks.size());
  d.reason = "replace " + std::to_string(n) + (n == 1 ? " rank (" : " ranks (") +
             std::to_string(d.spares_used) + " hot spare, " + std::to_string(n - d.spares_used) +
             " cold; " + std::to_string(off_leaf) + " off-leaf)";
  return d;
}

class RequeuePolicy final : public RecoveryPolicy {
 public:
  std::string_view name() const override { return "requeue"; }
  RecoveryDecision Decide(const RecoveryRequest& req, const RecoveryView& view) const override {
    return WholeGang(req, view, "");
  }
};

class ReplacePolicy final : public RecoveryPolicy {
 public:
  std::string_view name() const override { return "replace"; }
  RecoveryDecision Decide(const RecoveryRequest& req, const RecoveryView& view) const override {
    return ReplaceFailed(req, view, /*use_spares=*/false);
  }
};

class SparesPolicy final : public RecoveryPolicy {
 public:
  std::string_view name() const override { return "spares"; }
  bool uses_spares() const override { return true; }
  RecoveryDecision Decide(const RecoveryRequest& req, const RecoveryView& view) const override {
    return ReplaceFailed(req, view, /*use_spares=*/true);
  }
};

class ShrinkPolicy final : public RecoveryPolicy {
 public:
  explicit ShrinkPolicy(const RecoveryConfig& config) : config_(config) {}
  std::string_view name() const override { return "shrink"; }

  RecoveryDecision Decide(const RecoveryRequest& req, const RecoveryView& view) const override {
    if (req.failed_ranks.empty()) return InPlace(req);
    const int unit = Unit(req);
    Placement healthy;
    for (std::size_t r = 0; r < req.placement.size(); ++r) {
      if (!std::binary_search(req.failed_ranks.begin(), req.failed_ranks.end(),
                              static_cast<int>(r))) {
        healthy.push_back(req.placement[r]);
      }
    }
    // Surviving ranks regroup into whole replicas (the restart reloads the checkpoint anyway,
    // so any healthy rank can take any place); the remainder goes back to the free pool.
    const int keep = static_cast<int>(healthy.size()) / unit * unit;
    if (keep > 0 && keep >= MinWorkers(req)) {
      RecoveryDecision d;
      d.kind = Kind::kResize;
      healthy.resize(static_cast<std::size_t>(keep));
      d.placement = std::move(healthy);
      d.reason = "shrink to " + std::to_string(keep) + " of " + std::to_string(req.full_workers) +
                 " workers (" + std::to_string(unit) + " per replica)";
      return d;
    }
    RecoveryDecision d = ReplaceFailed(req, view, /*use_spares=*/false);
    d.reason = "below " + std::to_string(MinWorkers(req)) + " workers: " + d.reason;
    return d;
  }

  std::optional<RecoveryDecision> Grow(const RecoveryRequest& req,
                                       const RecoveryView& view) const override {
    const int current = static_cast<int>(req.placement.size());
    const int missing = req.full_workers - current;
    if (missing <= 0 || current == 0) return std::nullopt;
    const int unit = Unit(req);
    const auto domain = GangDomain(req, view);
    const NodeId near = req.placement.back().node;
    std::vector<NodeId> found;
    for (int i = 0; i < missing; ++i) {
      const TaskShape& shape = req.job->ShapeOfTask(current + i);
      auto n = FindNodeNear(*req.job, shape, near, domain, /*from_spares=*/false, found, view);
      if (!n) break;
      found.push_back(*n);
    }
    // Whole replicas only, unless the job is back at full size.
    const int add = static_cast<int>(found.size()) == missing
                        ? missing
                        : static_cast<int>(found.size()) / unit * unit;
    if (add == 0) return std::nullopt;
    RecoveryDecision d;
    d.kind = Kind::kResize;
    d.placement = req.placement;
    for (int i = 0; i < add; ++i) {
      d.placement.push_back(TaskOn(*view.state, found[static_cast<std::size_t>(i)],
                                   req.job->ShapeOfTask(current + i)));
    }
    d.reason = "grow from " + std::to_string(current) + " to " + std::to_string(current + add) +
               " of " + std::to_string(req.full_workers) + " workers";
    return d;
  }

 private:
  int Unit(const RecoveryRequest& req) const {
    return std::clamp(config_.shrink_unit, 1, std::max(1, req.full_workers));
  }
  int MinWorkers(const RecoveryRequest& req) const {
    if (config_.min_workers > 0) return config_.min_workers;
    if (req.job->min_workers > 0) return req.job->min_workers;
    return Unit(req);
  }

  RecoveryConfig config_;
};

}  // namespace

std::vector<std::string> RecoveryPolicyNames() {
  return {"requeue", "replace", "spares", "shrink"};
}

Result<std::unique_ptr<RecoveryPolicy>> MakeRecoveryPolicy(std::string_view name,
                                                           const RecoveryConfig& config) {
  if (config.shrink_unit < 1) {
    return InvalidArgument("shrink_unit: must be at least 1, got " +
                           std::to_string(config.shrink_unit));
  }
  if (config.min_workers < 0) {
    return InvalidArgument("min_workers: must be >= 0, got " + std::to_string(config.min_workers));
  }
  if (name == "requeue") return std::make_unique<RequeuePolicy>();
  if (name == "replace") return std::make_unique<ReplacePolicy>();
  if (name == "spares") return std::make_unique<SparesPolicy>();
  if (name == "shrink") return std::make_unique<ShrinkPolicy>(config);
  return InvalidArgument("recovery policy '" + std::string(name) +
                         "' is unknown (requeue, replace, spares, shrink; add +drain to any)");
}

}  // namespace tessera
