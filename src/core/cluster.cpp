#include "core/cluster.h"

namespace tessera {

int Topology::LevelIndex(const std::string& level) const {
  for (std::size_t i = 0; i < levels.size(); ++i) {
    if (levels[i] == level) return static_cast<int>(i);
  }
  return -1;
}

Result<NodeId> Cluster::AddNode(std::string name, std::string_view gpu_model, int gpu_count,
                                std::int64_t cpu_milli, std::int64_t memory_mib,
                                std::vector<std::uint32_t> domain) {
  if (gpu_count < 0 || gpu_count > kMaxGpusPerNode) {
    return InvalidArgument("node " + name + ": gpu count " + std::to_string(gpu_count) +
                           " is outside 0.." + std::to_string(kMaxGpusPerNode));
  }
  if (cpu_milli < 0 || memory_mib < 0) {
    return InvalidArgument("node " + name + ": cpu and memory must not be negative");
  }
  auto model = models_.Intern(gpu_model.empty() ? std::string_view("none") : gpu_model);
  if (!model) {
    return InvalidArgument("node " + name + ": more than " + std::to_string(kMaxGpuModels) +
                           " GPU models in one cluster");
  }
  Node n;
  n.id = NodeId(static_cast<std::uint32_t>(nodes_.size()));
  n.name = std::move(name);
  n.gpu_model = *model;
  n.gpu_count = gpu_count;
  n.capacity = Resources{cpu_milli, memory_mib, gpu_count * kMilliPerGpu};
  n.domain = std::move(domain);
  nodes_.push_back(std::move(n));
  total_gpus_ += gpu_count;
  return nodes_.back().id;
}

Resources ClusterCapacity(const Cluster& cluster) {
  Resources r;
  for (const auto& n : cluster.nodes()) r += n.capacity;
  return r;
}

}  // namespace tessera
