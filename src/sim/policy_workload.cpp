#include "sim/policy_workload.h"

#include <algorithm>
#include <cmath>

namespace tessera {

std::size_t MakeMultiNodeJobsElastic(std::vector<Workload>& jobs, double min_fraction,
                                     double max_fraction) {
  std::size_t changed = 0;
  for (auto& w : jobs) {
    if (w.groups.size() != 1 || w.groups[0].count < 2) continue;
    const int n = w.groups[0].count;
    w.min_workers = std::max(1, static_cast<int>(std::ceil(min_fraction * n)));
    w.max_workers = std::max(n, static_cast<int>(std::ceil(max_fraction * n)));
    ++changed;
  }
  return changed;
}

Result<std::vector<std::pair<std::string, double>>> ParseGpuSpeeds(const std::string& text) {
  std::vector<std::pair<std::string, double>> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgument("--gpu-speeds: '" + item + "' is not MODEL=SPEED");
    }
    char* end = nullptr;
    const std::string number = item.substr(eq + 1);
    const double speed = std::strtod(number.c_str(), &end);
    if (number.empty() || *end != '\0' || !(speed > 0) || !std::isfinite(speed)) {
      return InvalidArgument("--gpu-speeds: '" + item + "': the speed must be a positive number");
    }
    out.emplace_back(item.substr(0, eq), speed);
    start = comma + 1;
  }
  if (out.empty()) return InvalidArgument("--gpu-speeds: no MODEL=SPEED given");
  return out;
}

void SetGpuSpeeds(std::vector<Workload>& jobs, const Cluster& cluster,
                  const std::vector<std::pair<std::string, double>>& speeds) {
  for (auto& w : jobs) {
    const std::vector<std::string> before = w.gpu_models;
    w.gpu_models.clear();
    w.gpu_model_speeds.clear();
    for (const auto& [model, speed] : speeds) {
      if (!before.empty() && std::find(before.begin(), before.end(), model) == before.end())
        continue;
      w.gpu_models.push_back(model);
      w.gpu_model_speeds.push_back(speed);
    }
    ResolveGpuModels(cluster.models(), w);
  }
}

}  // namespace tessera
