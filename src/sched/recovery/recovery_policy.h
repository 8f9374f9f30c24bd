// The recovery extension point: a gang lost one or more nodes (or crashed with no faulty node);
// what now? A policy reads the failed job's placement, which ranks failed, the cluster state
// (healthy flags, free capacity), the leaf/spine topology and the hot spare pool, and answers
// with a value: requeue the whole gang elsewhere, replace the failed ranks' nodes, resize to
// fewer workers, or wait for capacity. Policies are pure (no clock, I/O or randomness) and
// iterate nodes in id order, so the same inputs give the same decision; the caller (the
// simulator, later the controller) applies the decision and charges its cost.
//
// Registered policies: requeue, replace, spares, shrink. The drain rule (take a node out of
// service when it keeps failing) is a separate value, DrainRule, that any caller combines with
// any policy ("replace+drain" on the command line).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cluster_state.h"
#include "core/placement.h"
#include "core/status.h"
#include "core/time.h"
#include "core/workload.h"
#include "sched/recovery/recovery_topology.h"

namespace tessera {

struct RecoveryRequest {
  const Workload* job = nullptr;  // task shapes, accepted GPU models, topology constraint
  Placement placement;            // where each rank runs now, in rank order
  std::vector<int> failed_ranks;  // ranks whose node is down, ascending; empty = a crash with
                                  // no faulty node (software), so the gang restarts in place
  int full_workers = 0;           // the job's size before any shrink
};

// What a policy may read of the cluster. Everything is owned by the caller and outlives the call.
struct RecoveryView {
  // Healthy flags and free capacity, with the failed job's own tasks still applied (its healthy
  // nodes look busy, its failed nodes unhealthy).
  const ClusterState* state = nullptr;
  const RecoveryTopology* topology = nullptr;
  // Hot spares: healthy idle nodes held back for recovery, by leaf, ascending id. Null or empty
  // when the caller keeps none. A spare is never handed out as an ordinary free node.
  const std::vector<std::vector<NodeId>>* spares_by_leaf = nullptr;
  const std::vector<std::uint8_t>* is_spare = nullptr;  // per node; null = no spares
};

struct RecoveryDecision {
  enum class Kind {
    kRequeue,  // give every node back; run the whole gang on `placement` (all nodes start cold)
    kReplace,  // keep the healthy ranks where they are; `replaced_ranks` move to new nodes
    kResize,   // run on `placement` (a prefix of the old ranks, or the old ranks plus new ones)
    kWait,     // no capacity now: keep the healthy nodes and ask again when the cluster changes
  };
  Kind kind = Kind::kWait;
  Placement placement;              // the gang after recovery, rank order (not for kWait)
  std::vector<int> replaced_ranks;  // kReplace: ranks on new nodes; empty = restart in place
  int spares_used = 0;              // kReplace: how many of the new nodes are hot spares
  std::string reason;               // why, for logs and the report's timeline
};

std::string_view DecisionKindName(RecoveryDecision::Kind k);  // requeue | replace | resize | wait

// Settings a recovery policy may read; each documents its default.
struct RecoveryConfig {
  // shrink: workers in one data-parallel replica. The job sheds and regains whole replicas.
  // Default 16 nodes = 128 GPUs, Llama 3 405B's tensor × pipeline group (TP 8 × PP 16).
  int shrink_unit = 16;
  // shrink: the fewest workers to run on; 0 = the job's elastic minimum, or one replica.
  int min_workers = 0;
};

class RecoveryPolicy {
 public:
  virtual ~RecoveryPolicy() = default;
  virtual std::string_view name() const = 0;
  // True when the caller should keep a pool of hot spares for this policy.
  virtual bool uses_spares() const { return false; }
  // What to do about the failure in `req`. REQUIRES: view.state and view.topology set;
  // req.placement has one task per rank.
  virtual RecoveryDecision Decide(const RecoveryRequest& req, const RecoveryView& view) const = 0;
  // For a job running below full size (after a shrink), at a checkpoint: a kResize decision to
  // grow back now, or nullopt to carry on as is. Default: never grows.
  virtual std::optional<RecoveryDecision> Grow(const RecoveryRequest& req,
                                               const RecoveryView& view) const;
};

// The policies by name: requeue, replace, spares, shrink.
std::vector<std::string> RecoveryPolicyNames();
Result<std::unique_ptr<RecoveryPolicy>> MakeRecoveryPolicy(std::string_view name,
                                                           const RecoveryConfig& config);

// Take a node out of service (for a deep repair) once it has failed `threshold` times within
// `window`. Kokolis et al. (2024) call such nodes "lemons": a few nodes cause a large share of
// large-job failures, and removing them raised large jobs' success rate.
struct DrainRule {
  int threshold = 2;  // failures; 0 = never drain
  Tick window = 7 * kDay;
  // `failure_times`: the node's failures so far, ascending, the latest at `now`.
  bool ShouldDrain(const std::vector<Tick>& failure_times, Tick now) const;
};

// Building blocks the policies share; public so that tests and callers can use them directly.

// A task of `shape` on `node` taking the lowest-indexed free GPUs. REQUIRES: it fits.
TaskPlacement TaskOn(const ClusterState& state, NodeId node, const TaskShape& shape);

// Places `workers` ranks of `job` (rank r gets job.ShapeOfTask(r)), one after another, on the
// nodes of `state` where they fit, leaf by leaf in leaf order so that consecutive ranks share a
// leaf; never on a spare; all within one domain of job.topology.require when the cluster has
// that level (the first domain, in index order, that can hold the gang). The tasks of
// `give_back` (the gang's own placement, for a requeue) count as free. nullopt when the gang
// does not fit. Pure: `state` is not changed.
std::optional<Placement> PlaceGangOnLeaves(const Workload& job, int workers,
                                           const ClusterState& state, const RecoveryView& view,
                                           const Placement* give_back = nullptr);

// A node for one rank of `shape` near `near`: first in near's leaf, then in the other leaves of
// its spine, then anywhere (lowest id first at each step); inside `required_domain` of level
// `job.topology.require` when given; never one of `exclude`. From the spare pool when
// `from_spares`, else from free nodes that are not spares. nullopt when none fits.
std::optional<NodeId> FindNodeNear(const Workload& job, const TaskShape& shape, NodeId near,
                                   std::optional<std::uint32_t> required_domain, bool from_spares,
                                   const std::vector<NodeId>& exclude, const RecoveryView& view);

}  // namespace tessera
