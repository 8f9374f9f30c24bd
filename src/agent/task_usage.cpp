#include "agent/task_usage.h"

#include <fstream>
#include <sstream>

#include "spec/gpu_usage_file.h"

namespace tessera {

std::string TaskUsagePath(const std::string& state_dir, std::int64_t task_id) {
  return state_dir + "/usage/task-" + std::to_string(task_id) + ".json";
}

void TaskUsageReader::Read(std::int64_t task_id, const std::string& node, const std::string& path,
                           const std::vector<int>& gpus, std::int64_t gpu_memory_bytes,
                           std::vector<GpuUsageReport>& out) {
  if (gpus.empty()) return;
  std::ifstream in(path);
  if (!in) return;  // not written (yet): the task says nothing
  std::stringstream text;
  text << in.rdbuf();
  auto reading = ParseGpuUsageFile(text.str(), gpu_memory_bytes);
  if (!reading) {
    std::string& last = problems_[task_id];
    if (last != reading.error().message) {
      last = reading.error().message;
      log_(node, "task " + std::to_string(task_id) + ": usage file " + path + " ignored: " + last);
    }
    return;
  }
  problems_.erase(task_id);
  for (int gpu : gpus)
    out.push_back({task_id, gpu, reading->utilization, reading->memory_used_bytes});
}

}  // namespace tessera
