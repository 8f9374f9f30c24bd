#include "sched/placement/fragmentation.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace tessera {

namespace {
auto ShapeKey(const WorkloadShape& w) {
  return std::make_tuple(w.shape.cpu_milli, w.shape.memory_mib, w.shape.gpus, w.shape.gpu_milli,
                         w.models.bits());
}
}  // namespace

TargetWorkload TargetWorkload::FromTasks(const std::vector<WorkloadShape>& tasks, double coverage) {
  std::map<decltype(ShapeKey(tasks.front())), WorkloadShape> by_key;
  std::int64_t total = 0;
  for (const auto& t : tasks) {
    auto [it, inserted] = by_key.try_emplace(ShapeKey(t), t);
    if (!inserted) it->second.count += t.count;
    total += t.count;
  }
  TargetWorkload w;
  w.total = total;
  for (auto& [key, shape] : by_key) w.shapes.push_back(shape);
  // Most frequent first; equal counts in descending (CPU, per-GPU milli, GPU count, models)
  // order, as the FGD authors' simulator orders them, so the same shapes survive the cut.
  std::stable_sort(
      w.shapes.begin(), w.shapes.end(), [](const WorkloadShape& a, const WorkloadShape& b) {
        return std::make_tuple(a.count, a.shape.cpu_milli, a.shape.gpu_milli, a.shape.gpus,
                               a.models.bits()) > std::make_tuple(b.count, b.shape.cpu_milli,
                                                                  b.shape.gpu_milli, b.shape.gpus,
                                                                  b.models.bits());
      });
  std::int64_t covered = 0;
  std::size_t keep = 0;
  while (keep < w.shapes.size() &&
         static_cast<double>(covered) < coverage * static_cast<double>(total)) {
    covered += w.shapes[keep++].count;
  }
  w.shapes.resize(keep);
  return w;
}

std::int64_t NodeFragmentForShape(const Node& node, const NodeState& s, const WorkloadShape& m) {
  std::int64_t all_free = 0;
  for (int g = 0; g < node.gpu_count; ++g) all_free += s.gpu_free[g];
  if (all_free == 0) return 0;
  if (m.shape.gpus == 0 || !m.models.Contains(node.gpu_model)) return all_free;
  if (s.free.cpu_milli < m.shape.cpu_milli) return all_free;
  // Which GPUs could serve one of m's tasks, and is there a set large enough?
  int usable = 0;
  std::int64_t unusable_free = 0;
  for (int g = 0; g < node.gpu_count; ++g) {
    if (s.gpu_free[g] >= m.shape.gpu_milli) {
      ++usable;
    } else {
      unusable_free += s.gpu_free[g];
    }
  }
  if (usable < m.shape.gpus) return all_free;
  return unusable_free;
}

std::int64_t ScaledNodeFragment(const Node& node, const NodeState& s, const TargetWorkload& w) {
  std::int64_t f = 0;
  for (const auto& m : w.shapes) f += m.count * NodeFragmentForShape(node, s, m);
  return f;
}

double FragmentationRatio(const ClusterState& state, const TargetWorkload& w) {
  if (w.total == 0) return 0;
  std::int64_t frag = 0;
  std::int64_t free = 0;
  for (const auto& n : state.cluster().nodes()) {
    const auto& s = state.node(n.id);
    if (!s.healthy) continue;
    frag += ScaledNodeFragment(n, s, w);
    free += s.free.gpu_milli;
  }
  if (free == 0) return 0;
  return static_cast<double>(frag) / static_cast<double>(w.total) / static_cast<double>(free);
}

}  // namespace tessera
