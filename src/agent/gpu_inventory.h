// The GPUs of this node: from NVML (libnvidia-ml.so.1 loaded with dlopen at run time, so the
// agent runs on machines without a driver), or simulated from a spec such as "8xH100". A
// simulated inventory is marked as such and the mark travels everywhere the node is shown.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "spec/protocol.h"

namespace tessera {

struct GpuInventory {
  std::vector<GpuInfo> gpus;
  bool simulated = false;
  std::string source;  // "nvml (driver 550.54)", "simulated", "none: <why>"
};

// "8xH100", "4xA100", "2x L40S": COUNTxMODEL with 0 <= COUNT <= 16.
Result<GpuInventory> SimulatedGpus(const std::string& spec, const std::string& node);

// Real GPUs through NVML; an error (with the reason) when there is no driver or no GPU.
Result<GpuInventory> NvmlGpus();

// "NVIDIA H100 80GB HBM3" -> "H100", "Tesla V100-SXM2-32GB" -> "V100".
std::string NormalizeGpuModel(const std::string& device_name);

}  // namespace tessera
