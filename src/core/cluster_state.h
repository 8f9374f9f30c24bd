// What is free on every node and every GPU right now. The one place where allocation happens:
// Apply() refuses any placement that would over-allocate a GPU, CPU or memory, or use an
// unhealthy node, and applies a gang all-or-nothing. Not thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/cluster.h"
#include "core/node_class_index.h"
#include "core/placement.h"
#include "core/status.h"

namespace tessera {

struct NodeState {
  Resources free;
  std::array<std::int32_t, kMaxGpusPerNode> gpu_free{};  // milli free per GPU
  std::uint32_t tasks = 0;
  std::uint64_t version = 0;  // new on every change, unique across copies; caches key on it
  bool healthy = true;

  int FullyFreeGpus(int gpu_count) const;
};

// A GPU task's affinity tag as the FGD authors' simulator names it (kubernetes-scheduler-simulator,
// GetGpuAffinityFromPodAnnotation): 0 for a share ("share-gpu"), N for N whole GPUs ("N-gpu").
constexpr std::int32_t GpuAffinityTag(int gpu_count, std::int32_t gpu_milli) {
  return gpu_count == 1 && gpu_milli < kMilliPerGpu ? 0 : gpu_count;
}

class ClusterState {
 public:
  explicit ClusterState(const Cluster& cluster);
  // A state whose node versions are drawn from `versions`, shared with the caller's earlier
  // states: every node starts at a fresh version, so a score memo kept across states (a
  // long-lived Scheduler, as the controller's) never takes one state's node for another's.
  ClusterState(const Cluster& cluster, std::shared_ptr<std::uint64_t> versions);

  const Cluster& cluster() const { return *cluster_; }
  const NodeState& node(NodeId id) const { return nodes_[id.value]; }
  int node_count() const { return static_cast<int>(nodes_.size()); }

  // True when `t` fits on its node now (healthy node, enough CPU, memory and GPU milli).
  bool Fits(const TaskPlacement& t) const;
  // Applies every task or none; fails naming the first task that does not fit.
  Status Apply(const Placement& p);
  // Returns the resources of a placement that was applied before.
  void Release(const Placement& p);
  void SetHealthy(NodeId id, bool healthy);

  std::int64_t allocated_gpu_milli() const { return allocated_gpu_milli_; }
  std::int64_t healthy_gpu_milli() const { return healthy_gpu_milli_; }
  std::int64_t free_gpu_milli() const { return free_gpu_milli_; }  // on healthy nodes

  // Per node, how many tasks hold each GPU-affinity tag (GpuAffinityTag), sorted by tag. The
  // GPU-clustering policy groups tasks of equal tag.
  const std::vector<std::pair<std::int32_t, std::uint32_t>>& gpu_affinities(NodeId id) const {
    return gpu_affinities_[id.value];
  }

  // The index of the nodes by class (node_class_index.h) in node `order` (null = node ids),
  // built on first use and kept up to date by every change from then on; copies carry it. A
  // state that a placer scans only a few times is cheaper without one, so until it has one,
  // `ClassIndexAfterScans` returns null for the first `scans` calls and builds it on the next.
  // An index built for another order is rebuilt. Logically const: the index is derived data.
  const NodeClassIndex* ClassIndexAfterScans(const std::shared_ptr<const NodeOrder>& order,
                                             std::uint32_t scans) const;
  const NodeClassIndex* class_index() const { return index_.get(); }

 private:
  void Take(const TaskPlacement& t);
  void Give(const TaskPlacement& t);

  void Touch(NodeState& s) { s.version = ++*version_source_; }
  void Reindex(NodeId id) {
    if (index_.get() != nullptr) index_.get()->Update(*this, id);
  }

  const Cluster* cluster_;
  // Shared by a state and its copies, so that a node's version never means two different
  // states, even across a scratch copy that diverged.
  std::shared_ptr<std::uint64_t> version_source_ = std::make_shared<std::uint64_t>(0);
  std::vector<NodeState> nodes_;
  std::vector<std::vector<std::pair<std::int32_t, std::uint32_t>>> gpu_affinities_;
  std::int64_t allocated_gpu_milli_ = 0;
  std::int64_t healthy_gpu_milli_ = 0;
  std::int64_t free_gpu_milli_ = 0;
  mutable NodeClassIndexSlot index_;
};

}  // namespace tessera
