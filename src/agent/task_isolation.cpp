#include "agent/task_isolation.h"

#include <algorithm>
#include <filesystem>

namespace tessera {

namespace {

bool Shares(const TaskLaunch& t) {
  return !t.gpus.empty() && (t.oversold || (t.gpu_milli > 0 && t.gpu_milli < 1000));
}

int ThreadPercentage(const TaskLaunch& t) {
  return std::clamp(static_cast<int>(t.gpu_milli / 10), 1, 100);
}

std::int64_t MemoryLimitMib(const TaskLaunch& t, std::int64_t gpu_memory_mib) {
  return gpu_memory_mib * std::clamp<std::int64_t>(t.gpu_milli, 1, 1000) / 1000;
}

}  // namespace

int CpuWeightFor(std::int64_t cpu_milli, bool oversold) {
  if (oversold) return 1;  // Kubernetes' BestEffort: shares 2, weight 1
  // Kubernetes MilliCPUToShares (1000 milli = 1024 shares, at least 2), then runc's
  // ConvertCPUSharesToCgroupV2Value: 1 + (shares − 2) × 9999 / 262142.
  const std::int64_t shares = std::clamp<std::int64_t>(cpu_milli * 1024 / 1000, 2, 262144);
  return static_cast<int>(1 + (shares - 2) * 9999 / 262142);
}

MpsSupport DetectMps(bool simulated_gpus, const std::string& pipe_dir) {
  MpsSupport m;
  m.pipe_dir = pipe_dir;
  if (simulated_gpus) {
    m.reason = "simulated GPUs (no CUDA device to share)";
    return m;
  }
  std::error_code ec;
  if (!std::filesystem::exists(pipe_dir + "/control", ec)) {
    m.reason =
        "no MPS control daemon (" + pipe_dir + "/control missing; nvidia-cuda-mps-control -d)";
    return m;
  }
  m.available = true;
  return m;
}

std::map<std::string, std::string> MpsEnvironment(const TaskLaunch& t, const MpsSupport& mps,
                                                  std::int64_t gpu_memory_mib) {
  std::map<std::string, std::string> env;
  if (!mps.available || !Shares(t)) return env;
  env["CUDA_MPS_PIPE_DIRECTORY"] = mps.pipe_dir;
  env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = std::to_string(ThreadPercentage(t));
  if (gpu_memory_mib > 0) {
    std::string limits;
    for (std::size_t i = 0; i < t.gpus.size(); ++i) {
      if (!limits.empty()) limits += ",";
      limits += std::to_string(i) + "=" + std::to_string(MemoryLimitMib(t, gpu_memory_mib)) + "M";
    }
    env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = limits;
  }
  return env;
}

std::string MpsSummary(const TaskLaunch& t, const MpsSupport& mps, std::int64_t gpu_memory_mib) {
  if (t.gpus.empty()) return "MPS: no GPU";
  if (!Shares(t)) return "MPS: not needed (whole GPUs)";
  if (!mps.available) return "MPS: not possible: " + mps.reason;
  std::string s = "MPS: active threads " + std::to_string(ThreadPercentage(t)) + "%";
  if (gpu_memory_mib > 0)
    s += ", pinned memory " + std::to_string(MemoryLimitMib(t, gpu_memory_mib)) + " MiB per GPU";
  return s;
}

}  // namespace tessera
