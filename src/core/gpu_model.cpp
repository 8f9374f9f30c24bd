#include "core/gpu_model.h"

namespace tessera {

std::optional<GpuModelId> GpuModelCatalog::Intern(std::string_view name) {
  if (auto found = Find(name)) return found;
  if (static_cast<int>(names_.size()) >= kMaxGpuModels) return std::nullopt;
  auto id = static_cast<GpuModelId>(names_.size());
  names_.emplace_back(name);
  ids_.emplace(std::string(name), id);
  return id;
}

std::optional<GpuModelId> GpuModelCatalog::Find(std::string_view name) const {
  auto it = ids_.find(name);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

GpuModelSet GpuModelCatalog::Resolve(const std::vector<std::string>& names) const {
  if (names.empty()) return GpuModelSet::Any();
  GpuModelSet set = GpuModelSet::None();
  for (const auto& n : names) {
    if (auto id = Find(n)) set.Add(*id);
  }
  return set;
}

}  // namespace tessera
