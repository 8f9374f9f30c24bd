#include "core/workload.h"

#include <array>
#include <utility>

namespace tessera {

namespace {
constexpr std::array<std::pair<WorkloadKind, std::string_view>, 5> kKindNames{{
    {WorkloadKind::kTraining, "TrainingJob"},
    {WorkloadKind::kInference, "InferenceService"},
    {WorkloadKind::kBatch, "BatchJob"},
    {WorkloadKind::kDevSession, "DevSession"},
    {WorkloadKind::kRL, "RLJob"},
}};
}  // namespace

std::string_view KindName(WorkloadKind k) {
  for (const auto& [kind, name] : kKindNames) {
    if (kind == k) return name;
  }
  return "Unknown";
}

bool ParseKind(std::string_view name, WorkloadKind* out) {
  for (const auto& [kind, n] : kKindNames) {
    if (n == name) {
      *out = kind;
      return true;
    }
  }
  return false;
}

int Workload::TaskCount() const {
  int n = 0;
  for (const auto& g : groups) n += g.count;
  return n;
}

std::int64_t Workload::TotalGpuMilli() const { return TotalResources().gpu_milli; }

Resources Workload::TotalResources() const {
  Resources r;
  for (const auto& g : groups) r += g.shape.Total() * g.count;
  return r;
}

const TaskShape& Workload::ShapeOfTask(int rank) const {
  for (const auto& g : groups) {
    if (rank < g.count) return g.shape;
    rank -= g.count;
  }
  return groups.back().shape;
}

void ResolveGpuModels(const GpuModelCatalog& catalog, Workload& w) {
  w.allowed_models = catalog.Resolve(w.gpu_models);
  w.model_speed.clear();
  if (w.gpu_model_speeds.empty()) return;
  w.model_speed.assign(static_cast<std::size_t>(catalog.size()), 1.0);
  for (std::size_t i = 0; i < w.gpu_models.size() && i < w.gpu_model_speeds.size(); ++i) {
    if (auto id = catalog.Find(w.gpu_models[i])) w.model_speed[*id] = w.gpu_model_speeds[i];
  }
}

}  // namespace tessera
