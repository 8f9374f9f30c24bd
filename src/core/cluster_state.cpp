#include "core/cluster_state.h"

#include <algorithm>
#include <bit>
#include <string>

namespace tessera {

int NodeState::FullyFreeGpus(int gpu_count) const {
  int n = 0;
  for (int g = 0; g < gpu_count; ++g) n += gpu_free[g] == kMilliPerGpu;
  return n;
}

ClusterState::ClusterState(const Cluster& cluster)
    : cluster_(&cluster), nodes_(cluster.nodes().size()), gpu_affinities_(cluster.nodes().size()) {
  for (const auto& n : cluster.nodes()) {
    auto& s = nodes_[n.id.value];
    s.free = n.capacity;
    for (int g = 0; g < n.gpu_count; ++g) s.gpu_free[g] = kMilliPerGpu;
    healthy_gpu_milli_ += n.capacity.gpu_milli;
  }
  free_gpu_milli_ = healthy_gpu_milli_;
}

ClusterState::ClusterState(const Cluster& cluster, std::shared_ptr<std::uint64_t> versions)
    : ClusterState(cluster) {
  version_source_ = std::move(versions);
  for (auto& s : nodes_) Touch(s);
}

bool ClusterState::Fits(const TaskPlacement& t) const {
  if (!t.node.valid() || t.node.value >= nodes_.size()) return false;
  const auto& s = nodes_[t.node.value];
  const auto& n = cluster_->node(t.node);
  if (!s.healthy) return false;
  if (t.gpu_mask >> n.gpu_count) return false;  // a GPU the node does not have
  if (t.gpu_milli < 0 || t.gpu_milli > kMilliPerGpu) return false;
  if (s.free.cpu_milli < t.cpu_milli || s.free.memory_mib < t.memory_mib) return false;
  for (unsigned m = t.gpu_mask; m != 0; m &= m - 1) {
    if (s.gpu_free[std::countr_zero(m)] < t.gpu_milli) return false;
  }
  return true;
}

Status ClusterState::Apply(const Placement& p) {
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (!Fits(p[i])) {
      for (std::size_t j = 0; j < i; ++j) Give(p[j]);
      return FailedPrecondition("task " + std::to_string(i) + " does not fit on node " +
                                std::to_string(p[i].node.value));
    }
    Take(p[i]);  // take now so that two tasks of one gang cannot share a GPU's last milli
  }
  return {};
}

void ClusterState::Release(const Placement& p) {
  for (const auto& t : p) Give(t);
}

void ClusterState::Take(const TaskPlacement& t) {
  auto& s = nodes_[t.node.value];
  s.free.cpu_milli -= t.cpu_milli;
  s.free.memory_mib -= t.memory_mib;
  for (unsigned m = t.gpu_mask; m != 0; m &= m - 1) s.gpu_free[std::countr_zero(m)] -= t.gpu_milli;
  const std::int64_t gpu = t.gpu_count() * std::int64_t{t.gpu_milli};
  s.free.gpu_milli -= gpu;
  allocated_gpu_milli_ += gpu;
  if (s.healthy) free_gpu_milli_ -= gpu;
  ++s.tasks;
  Touch(s);
  if (t.gpu_mask != 0) {
    auto& tags = gpu_affinities_[t.node.value];
    const std::int32_t tag = GpuAffinityTag(t.gpu_count(), t.gpu_milli);
    auto it = std::lower_bound(tags.begin(), tags.end(), std::make_pair(tag, 0U));
    if (it != tags.end() && it->first == tag) {
      ++it->second;
    } else {
      tags.insert(it, {tag, 1U});
    }
  }
  Reindex(t.node);
}

void ClusterState::Give(const TaskPlacement& t) {
  auto& s = nodes_[t.node.value];
  s.free.cpu_milli += t.cpu_milli;
  s.free.memory_mib += t.memory_mib;
  for (unsigned m = t.gpu_mask; m != 0; m &= m - 1) s.gpu_free[std::countr_zero(m)] += t.gpu_milli;
  const std::int64_t gpu = t.gpu_count() * std::int64_t{t.gpu_milli};
  s.free.gpu_milli += gpu;
  allocated_gpu_milli_ -= gpu;
  if (s.healthy) free_gpu_milli_ += gpu;
  --s.tasks;
  Touch(s);
  if (t.gpu_mask != 0) {
    auto& tags = gpu_affinities_[t.node.value];
    const std::int32_t tag = GpuAffinityTag(t.gpu_count(), t.gpu_milli);
    auto it = std::lower_bound(tags.begin(), tags.end(), std::make_pair(tag, 0U));
    if (it != tags.end() && it->first == tag && --it->second == 0) tags.erase(it);
  }
  Reindex(t.node);
}

void ClusterState::SetHealthy(NodeId id, bool healthy) {
  auto& s = nodes_[id.value];
  if (s.healthy == healthy) return;
  s.healthy = healthy;
  Touch(s);
  const auto cap = cluster_->node(id).capacity.gpu_milli;
  healthy_gpu_milli_ += healthy ? cap : -cap;
  free_gpu_milli_ += healthy ? s.free.gpu_milli : -s.free.gpu_milli;
  Reindex(id);
}

const NodeClassIndex* ClusterState::ClassIndexAfterScans(
    const std::shared_ptr<const NodeOrder>& order, std::uint32_t scans) const {
  const NodeClassIndex* index = index_.get();
  if (index != nullptr && index->order() == order.get()) return index;
  if (index == nullptr && index_.scans()++ < scans) return nullptr;
  index_.reset(std::make_unique<NodeClassIndex>(*this, order));
  return index_.get();
}

}  // namespace tessera
