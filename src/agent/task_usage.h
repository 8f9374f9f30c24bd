// The GPU usage the agent reports in its heartbeats (docs/gpu-usage.md): what each running task
// wrote to its usage file (TESSERA_GPU_USAGE_FILE, spec/gpu_usage_file.h), one report per GPU
// the task holds. A file not written yet is no report; one that does not parse or is out of
// range is ignored, its reason logged once per task until it changes.
//
// Thread-safety: none; the agent calls it under its own lock.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "spec/protocol.h"

namespace tessera {

// Where task `task_id`'s usage file lives: STATE_DIR/usage/task-ID.json.
std::string TaskUsagePath(const std::string& state_dir, std::int64_t task_id);

class TaskUsageReader {
 public:
  using Logger = std::function<void(const std::string& node, const std::string& message)>;
  explicit TaskUsageReader(Logger log) : log_(std::move(log)) {}

  // Appends the reports of one task, read from `path`, for each of `gpus` (of
  // `gpu_memory_bytes` each).
  void Read(std::int64_t task_id, const std::string& node, const std::string& path,
            const std::vector<int>& gpus, std::int64_t gpu_memory_bytes,
            std::vector<GpuUsageReport>& out);
  void Forget(std::int64_t task_id) { problems_.erase(task_id); }

 private:
  Logger log_;
  std::map<std::int64_t, std::string> problems_;  // the last reason logged, per task
};

}  // namespace tessera
