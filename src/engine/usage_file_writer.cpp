#include "engine/usage_file_writer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "spec/gpu_usage_file.h"

namespace tessera::engine {

UsageFileWriter::UsageFileWriter(const EngineRunner& runner, std::string path, int interval_ms)
    : runner_(runner),
      path_(std::move(path)),
      interval_ms_(interval_ms),
      last_busy_seconds_(runner.Counters().busy_seconds),
      last_at_(std::chrono::steady_clock::now()) {
  thread_ = std::thread([this] {
    while (!stop_) {
      for (int waited = 0; waited < interval_ms_ && !stop_; waited += 50)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (!stop_) WriteOnce();
    }
  });
}

UsageFileWriter::~UsageFileWriter() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void UsageFileWriter::WriteOnce() {
  const EngineCounters c = runner_.Counters();
  const auto now = std::chrono::steady_clock::now();
  const double wall = std::chrono::duration<double>(now - last_at_).count();
  GpuUsageReading r;
  r.utilization = wall > 0 ? std::clamp((c.busy_seconds - last_busy_seconds_) / wall, 0.0, 1.0) : 0;
  const EngineOptions& o = runner_.options();
  r.memory_used_bytes = static_cast<std::int64_t>(c.kv_usage * static_cast<double>(o.gpu_blocks) *
                                                  o.block_tokens * o.profile.kv_bytes_per_token);
  last_busy_seconds_ = c.busy_seconds;
  last_at_ = now;
  const std::string tmp = path_ + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << GpuUsageFileText(r);
    if (!out) {
      spdlog::warn("usage file {}: cannot write", tmp);
      return;
    }
  }
  if (std::rename(tmp.c_str(), path_.c_str()) != 0)
    spdlog::warn("usage file {}: cannot rename", path_);
}

}  // namespace tessera::engine
