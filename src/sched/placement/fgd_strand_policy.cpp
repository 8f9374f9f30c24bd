// fgd-strand: FGD (Weng et al., "Beware of Fragmentation", USENIX ATC'23) extended with two
// things FGD's measure cannot see on a CPU-heavy, multi-model cluster (docs/beyond-fgd.md):
//
//  1. Stranded GPUs. FGD asks only whether ONE more task of a shape m still fits a node. A
//     node whose CPU (or memory) will run out before its GPUs do looks unfragmented to FGD
//     until the very last task, and then all its free GPUs are lost at once. For every target
//     shape m we also count S_n(m), the GPU milli that a stream of m-tasks could not take
//     because m's CPU (and memory, when the target workload carries it) runs out first:
//       S_n(m) = max(0, U_n(m) − ⌊k·u·C_free / c⌋, U_n(m) − ⌊k·u·M_free / mem⌋)
//     (U_n(m): free milli of the GPUs that can take m; k GPUs of u milli per task; c, mem:
//     m's CPU and memory). This is the "stranded resources" of Borg (Verma et al., EuroSys'15)
//     and the multi-resource view of Tetris (Grandl et al., SIGCOMM'14), measured in FGD's
//     currency: GPU milli that the expected workload cannot use.
//     The node measure is G_n = Σ_m count_m · (4·F_n(m) + α·4·S_n(m)): a stranded milli counts
//     α = 1/4 of a fragmented one, because F is certain for the next task while S is a
//     forecast that assumes m keeps arriving. When the workload needs more CPU (or memory) per
//     GPU than the cluster has (pressure > 1.05, below), CPU runs out before the GPUs on the
//     cluster as a whole: the forecast becomes a certainty and α = 1 (see the doc's sweeps).
//  2. Model scarcity. FGD rewards taking GPUs a constrained shape cannot use, but does not
//     weigh how scarce a model is. Each GPU model X gets a static price per milli taken,
//       π_X = round(4 · 0.3 · W · ρ_X),  ρ_X = Σ_{m constrained, X ∈ models(m)} (D_m/D)·(C/C_m)
//     (D_m: m's GPU demand in the target workload, D: all of it, C: the cluster's GPU milli,
//     C_m: the GPU milli of the models m accepts, W: the target's task count; shapes that
//     accept every model present are not constrained). ρ_X is how oversubscribed X is by the
//     tasks that cannot go elsewhere, in the spirit of LP shadow prices; 0.3 was swept.
//
// Score = −ΔG_n − π_model · (GPU milli of the task), all in exact integers. GPUs are chosen as
// FGD does (tightest share GPU by ΔG, lowest fully free GPUs for whole GPUs). With no CPU or
// memory pressure and no constrained shapes the score is 4× FGD's. Not thread-safe (memos):
// one policy object per scheduler.
#include <algorithm>
#include <array>
#include <cmath>
#include <unordered_map>

#include "sched/placement/node_state_key.h"
#include "sched/placement/policies.h"

namespace tessera {

namespace {

// A fragmented milli counts kFragmentWeight, a stranded one 1 (α = 1/4) or, under pressure,
// kFragmentWeight (α = 1).
constexpr std::int64_t kFragmentWeight = 4;
// The workload's CPU (or memory) per GPU milli over the cluster's above which α = 1: CPU is then
// short for the whole cluster, not only on some nodes.
constexpr double kBindingPressure = 1.05;
// Expected milli lost per milli taken on a model, per unit of oversubscription ρ_X.
constexpr double kScarcityPrice = 0.3;

class FgdStrandPolicy final : public PlacementPolicy {
 public:
  explicit FgdStrandPolicy(TargetWorkload w) : workload_(std::move(w)) {
    for (const auto& m : workload_.shapes) {
      uses_memory_ = uses_memory_ || m.shape.memory_mib > 0;
      total_count_ += m.count;
    }
  }
  std::string_view name() const override { return "fgd-strand"; }
  bool scores_from_state() const override { return true; }

  NodeScore Score(const ClusterState& state, NodeId id, const TaskShape& shape,
                  Rng&) const override {
    const auto& node = state.cluster().node(id);
    const auto& s = state.node(id);
    UseCluster(state.cluster());
    const std::int64_t before = Measure(node, s);
    const std::int64_t price =
        shape.gpus > 0 ? prices_[node.gpu_model] * shape.gpus * shape.gpu_milli : 0;
    auto score_if = [&](std::uint16_t mask) {
      NodeState after = s;
      after.free.cpu_milli -= shape.cpu_milli;
      after.free.memory_mib -= shape.memory_mib;
      for (int g = 0; g < node.gpu_count; ++g) {
        if (mask >> g & 1) {
          after.gpu_free[g] -= shape.gpu_milli;
          after.free.gpu_milli -= shape.gpu_milli;
        }
      }
      return -static_cast<double>(Measure(node, after) - before + price);
    };
    if (!shape.IsShare()) {
      const auto mask = TightestGpus(node, s, shape);
      return {score_if(mask), mask};
    }
    NodeScore best{0, 0};
    std::int32_t tried_free = -1;
    for (int g = 0; g < node.gpu_count; ++g) {
      if (s.gpu_free[g] < shape.gpu_milli) continue;
      if (s.gpu_free[g] == tried_free) continue;  // same free milli, same outcome
      const auto mask = static_cast<std::uint16_t>(1U << g);
      const double score = score_if(mask);
      if (best.gpu_mask == 0 || score > best.score) best = {score, mask};
      tried_free = s.gpu_free[g];
    }
    return best;
  }

 private:
  // G_n = Σ_m count_m · (kFragmentWeight · F_n(m) + strand_weight_ · S_n(m)), in milli-GPU ×
  // tasks.
  std::int64_t Measure(const Node& node, const NodeState& s) const {
    const auto key = NodeStateKey::Of(node, s, uses_memory_);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    std::int64_t all_free = 0;
    for (int g = 0; g < node.gpu_count; ++g) all_free += s.gpu_free[g];
    std::int64_t g_n = 0;
    if (all_free > 0) {
      for (const auto& m : workload_.shapes) {
        g_n += m.count * ShapeTerm(node, s, m, all_free, strand_weight_);
      }
    }
    memo_.emplace(key, g_n);
    return g_n;
  }

  // kFragmentWeight · F_n(m) + strand_weight · S_n(m) for one shape.
  static std::int64_t ShapeTerm(const Node& node, const NodeState& s, const WorkloadShape& m,
                                std::int64_t all_free, std::int64_t strand_weight) {
    const TaskShape& t = m.shape;
    const std::int64_t all = kFragmentWeight * all_free;
    if (t.gpus == 0 || !m.models.Contains(node.gpu_model)) return all;
    if (s.free.cpu_milli < t.cpu_milli || s.free.memory_mib < t.memory_mib) return all;
    int usable = 0;
    std::int64_t usable_free = 0;  // U_n(m)
    for (int g = 0; g < node.gpu_count; ++g) {
      if (s.gpu_free[g] >= t.gpu_milli) {
        ++usable;
        usable_free += s.gpu_free[g];
      }
    }
    if (usable < t.gpus) return all;
    // What the CPU and memory left would let a stream of m-tasks take, in GPU milli.
    const std::int64_t per_task = std::int64_t{t.gpus} * t.gpu_milli;
    std::int64_t takeable = usable_free;
    if (t.cpu_milli > 0) takeable = std::min(takeable, per_task * s.free.cpu_milli / t.cpu_milli);
    if (t.memory_mib > 0) {
      takeable = std::min(takeable, per_task * s.free.memory_mib / t.memory_mib);
    }
    return kFragmentWeight * (all_free - usable_free) + strand_weight * (usable_free - takeable);
  }

  // The model prices π_X and the stranding weight, computed once per cluster (memos: pure
  // functions of the cluster and the target workload); the node measures are forgotten when
  // the weight is recomputed. The cluster is recognised by its address, its node array and its
  // sizes, which a scheduler's cluster keeps for its lifetime; checking its contents would cost
  // O(nodes) per score.
  void UseCluster(const Cluster& cluster) const {
    const PriceKey key{&cluster, cluster.nodes().data(), cluster.node_count(), cluster.total_gpus(),
                       cluster.models().size()};
    if (key == price_key_) return;
    ComputePrices(cluster);
    const std::int64_t weight = Pressure(cluster) > kBindingPressure ? kFragmentWeight : 1;
    if (weight != strand_weight_) memo_.clear();
    strand_weight_ = weight;
    price_key_ = key;
  }

  // The workload's CPU (or memory, when the target carries it) per GPU milli over the
  // cluster's, whichever is larger: above 1 the cluster runs out of it before its GPUs.
  double Pressure(const Cluster& cluster) const {
    double gpu = 0, cpu = 0, mem = 0;  // of the workload, weighted by count
    for (const auto& m : workload_.shapes) {
      const auto n = static_cast<double>(m.count);
      gpu += n * m.shape.gpus * m.shape.gpu_milli;
      cpu += n * static_cast<double>(m.shape.cpu_milli);
      mem += n * static_cast<double>(m.shape.memory_mib);
    }
    double cap_gpu = 0, cap_cpu = 0, cap_mem = 0;
    for (const auto& n : cluster.nodes()) {
      cap_gpu += static_cast<double>(n.capacity.gpu_milli);
      cap_cpu += static_cast<double>(n.capacity.cpu_milli);
      cap_mem += static_cast<double>(n.capacity.memory_mib);
    }
    if (gpu == 0 || cap_gpu == 0) return 0;
    const double cpu_pressure = cap_cpu > 0 ? (cpu / gpu) / (cap_cpu / cap_gpu) : 0;
    const double mem_pressure = cap_mem > 0 ? (mem / gpu) / (cap_mem / cap_gpu) : 0;
    return std::max(cpu_pressure, mem_pressure);
  }

  void ComputePrices(const Cluster& cluster) const {
    prices_.fill(0);
    std::array<std::int64_t, kMaxGpuModels> supply{};  // GPU milli per model
    for (const auto& n : cluster.nodes()) supply[n.gpu_model] += n.capacity.gpu_milli;
    std::int64_t capacity = 0;
    for (auto x : supply) capacity += x;
    std::int64_t demand = 0;
    for (const auto& m : workload_.shapes) demand += m.count * m.shape.gpus * m.shape.gpu_milli;
    if (capacity == 0 || demand == 0) return;
    std::array<double, kMaxGpuModels> rho{};
    for (const auto& m : workload_.shapes) {  // in the target's defined order
      if (m.shape.gpus == 0) continue;
      std::int64_t accepted = 0;
      for (int x = 0; x < kMaxGpuModels; ++x) {
        if (m.models.Contains(static_cast<GpuModelId>(x))) accepted += supply[x];
      }
      if (accepted == 0 || accepted == capacity) continue;  // unplaceable, or unconstrained
      const double share = static_cast<double>(m.count * m.shape.gpus * m.shape.gpu_milli) /
                           static_cast<double>(demand) * static_cast<double>(capacity) /
                           static_cast<double>(accepted);
      for (int x = 0; x < kMaxGpuModels; ++x) {
        if (m.models.Contains(static_cast<GpuModelId>(x)) && supply[x] > 0) rho[x] += share;
      }
    }
    for (int x = 0; x < kMaxGpuModels; ++x) {
      prices_[x] = std::llround(static_cast<double>(kFragmentWeight) * kScarcityPrice *
                                static_cast<double>(total_count_) * rho[x]);
    }
  }

  TargetWorkload workload_;
  bool uses_memory_ = false;
  std::int64_t total_count_ = 0;
  mutable std::unordered_map<NodeStateKey, std::int64_t, NodeStateKeyHash> memo_;  // memo only
  // Memo of the model prices and the cluster they were computed for.
  struct PriceKey {
    const Cluster* cluster = nullptr;
    const Node* nodes = nullptr;
    int node_count = -1;
    std::int64_t gpus = -1;
    int models = -1;
    friend bool operator==(const PriceKey&, const PriceKey&) = default;
  };
  mutable PriceKey price_key_;
  mutable std::array<std::int64_t, kMaxGpuModels> prices_{};
  mutable std::int64_t strand_weight_ = 1;  // S's weight: 1 (α = 1/4) or kFragmentWeight
};

}  // namespace

std::unique_ptr<PlacementPolicy> MakeFgdStrandPolicy(const PlacementConfig& config) {
  // Every shape of the workload when the caller gave them, FGD's target otherwise.
  return std::make_unique<FgdStrandPolicy>(
      config.workload_mix.shapes.empty() ? config.target_workload : config.workload_mix);
}

}  // namespace tessera
