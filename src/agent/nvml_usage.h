// Per-GPU utilisation and memory in use from NVML, for the heartbeat's usage reports (task 0:
// the device as measured). libnvidia-ml.so.1 is loaded with dlopen when the agent starts; on a
// machine without a driver Open says why and the agent reports only what tasks write to their
// usage files (docs/gpu-usage.md).
//
// Thread-safety: Read is called under the agent's lock.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "spec/protocol.h"

namespace tessera {

class NvmlUsage {
 public:
  // nullptr, with `why`, when NVML cannot be loaded or initialised.
  static std::unique_ptr<NvmlUsage> Open(std::string* why);
  ~NvmlUsage();
  NvmlUsage(const NvmlUsage&) = delete;
  NvmlUsage& operator=(const NvmlUsage&) = delete;

  // One report per device that answered: utilisation over NVML's last sample period.
  std::vector<GpuUsageReport> Read() const;

 private:
  NvmlUsage() = default;
  struct Api;
  void* lib_ = nullptr;
  std::unique_ptr<Api> api_;
};

}  // namespace tessera
