// Writes the simulated engine's GPU use to the usage file Tessera names in
// TESSERA_GPU_USAGE_FILE (spec/gpu_usage_file.h, docs/gpu-usage.md), every interval: its busy
// fraction (modelled step time ÷ wall time since the last write) and the KV cache's memory in
// use (blocks in use × block bytes). Written to a temporary file and renamed, so the agent
// never reads half a file.
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "engine/engine_runner.h"

namespace tessera::engine {

class UsageFileWriter {
 public:
  UsageFileWriter(const EngineRunner& runner, std::string path, int interval_ms);
  ~UsageFileWriter();
  UsageFileWriter(const UsageFileWriter&) = delete;
  UsageFileWriter& operator=(const UsageFileWriter&) = delete;

  // One write now (also what the thread does each interval).
  void WriteOnce();

 private:
  const EngineRunner& runner_;
  std::string path_;
  int interval_ms_;
  double last_busy_seconds_ = 0;
  std::chrono::steady_clock::time_point last_at_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace tessera::engine
