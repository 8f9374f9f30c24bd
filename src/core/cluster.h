// The static description of a cluster: its nodes, their GPUs and where each node sits in the
// network topology. What is free or allocated lives in ClusterState, not here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/gpu_model.h"
#include "core/ids.h"
#include "core/resources.h"
#include "core/status.h"

namespace tessera {

inline constexpr int kMaxGpusPerNode = 16;

// Named levels above the node, outermost first, e.g. {"spine", "leaf"} or
// {"spine", "leaf", "nvl72"}. Every node has one domain index per level.
struct Topology {
  std::vector<std::string> levels;
  std::vector<std::vector<std::string>> domain_names;  // [level][domain index]

  // Index of `level`, or -1. "node" and "gpu" are implicit levels below the named ones.
  int LevelIndex(const std::string& level) const;
};

struct Node {
  NodeId id;
  std::string name;
  GpuModelId gpu_model = 0;
  int gpu_count = 0;
  Resources capacity;                 // capacity.gpu_milli == gpu_count * 1000
  std::vector<std::uint32_t> domain;  // one index per Topology level
  bool simulated_gpus = false;        // named as such wherever the node is shown
};

class Cluster {
 public:
  Cluster() = default;

  // Adds a node; fails when the GPU count, the model or the resources are out of range.
  Result<NodeId> AddNode(std::string name, std::string_view gpu_model, int gpu_count,
                         std::int64_t cpu_milli, std::int64_t memory_mib,
                         std::vector<std::uint32_t> domain = {});

  const std::vector<Node>& nodes() const { return nodes_; }
  const Node& node(NodeId id) const { return nodes_[id.value]; }
  int node_count() const { return static_cast<int>(nodes_.size()); }
  std::int64_t total_gpus() const { return total_gpus_; }
  const GpuModelCatalog& models() const { return models_; }
  GpuModelCatalog& mutable_models() { return models_; }
  const Topology& topology() const { return topology_; }
  void set_topology(Topology t) { topology_ = std::move(t); }

 private:
  std::vector<Node> nodes_;
  GpuModelCatalog models_;
  Topology topology_;
  std::int64_t total_gpus_ = 0;
};

// The sum of the nodes' CPU, memory and GPUs (what fractions of a queue tree resolve against).
Resources ClusterCapacity(const Cluster& cluster);

}  // namespace tessera
