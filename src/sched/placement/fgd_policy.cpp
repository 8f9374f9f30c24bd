// fgd: Fragmentation Gradient Descent (Weng et al., USENIX ATC'23, Algorithm 1), scored as the
// FGD authors' simulator scores it (fgd_score.go): place the task on the node, and for a share
// on the GPU, where the node's fragmentation F_n (fragmentation.h) grows least. With ΔF = F_n
// before − F_n after in milli-GPU (p_m = a shape's share of the target's kept tasks), the score
// is int(100·sigmoid(ΔF/1000)); a share takes the first GPU with the highest such score, whole
// GPUs the lowest-numbered free ones. PlacementConfig::exact_scores compares −ΔF exactly
// instead (Tessera's earlier reading; fewer ties). Not thread-safe (memo): one policy object
// per scheduler.
#include <cmath>
#include <unordered_map>

#include "sched/placement/node_state_key.h"
#include "sched/placement/policies.h"
#include "sched/placement/reference_scores.h"

namespace tessera {

namespace {

std::int64_t KeptTasks(const TargetWorkload& w) {
  std::int64_t kept = 0;
  for (const auto& m : w.shapes) kept += m.count;
  return kept;
}

class FgdPolicy final : public PlacementPolicy {
 public:
  FgdPolicy(TargetWorkload w, bool exact)
      : workload_(std::move(w)), kept_(KeptTasks(workload_)), exact_(exact) {}
  std::string_view name() const override { return "fgd"; }
  bool scores_from_state() const override { return true; }
  NodeScore Score(const ClusterState& state, NodeId id, const TaskShape& shape,
                  Rng&) const override {
    const auto& node = state.cluster().node(id);
    const auto& s = state.node(id);
    const std::int64_t before = Fragment(node, s);
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
      return ScoreOf(before - Fragment(node, after));
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
      if (best.gpu_mask == 0 || score > best.score) best = {score, mask};  // first best wins
      tried_free = s.gpu_free[g];
    }
    return best;
  }

 private:
  // `decrease` is F_n before − after, scaled by TargetWorkload::total (fragmentation.h).
  double ScoreOf(std::int64_t decrease) const {
    if (exact_) return static_cast<double>(decrease);
    if (kept_ == 0) return 0;
    // Milli-GPU under p_m = count / kept tasks, then the reference's sigmoid of GPUs.
    const double gpus = static_cast<double>(decrease) / static_cast<double>(kept_) / 1000.0;
    return reference::Truncate(1.0 / (1.0 + std::exp(-gpus)) *
                               static_cast<double>(reference::kMaxNodeScore));
  }

  std::int64_t Fragment(const Node& node, const NodeState& s) const {
    // F_n ignores memory, so the memo key leaves it out.
    const auto key = NodeStateKey::Of(node, s, /*with_memory=*/false);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    const std::int64_t f = ScaledNodeFragment(node, s, workload_);
    memo_.emplace(key, f);
    return f;
  }

  TargetWorkload workload_;
  std::int64_t kept_;  // tasks of the kept shapes: p_m's denominator, as the reference renormalises
  bool exact_;
  mutable std::unordered_map<NodeStateKey, std::int64_t, NodeStateKeyHash> memo_;  // memo only
};
}  // namespace

std::unique_ptr<PlacementPolicy> MakeFgdPolicy(const PlacementConfig& config) {
  return std::make_unique<FgdPolicy>(config.target_workload, config.exact_scores);
}

}  // namespace tessera
