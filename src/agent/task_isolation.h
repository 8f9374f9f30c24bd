// Isolation of one task where the machine allows it (docs/colocation.md, "Isolation"):
//   - cgroup v2, every task: cpu.weight from its CPU request (Kubernetes' conversion of a CPU
//     request to cgroup v1 shares, then runc's conversion of shares to a v2 weight), the
//     BestEffort weight (1) for a task on oversold GPU credit, and memory.max = its memory
//     request;
//   - CUDA MPS, a task with a share of a GPU or on oversold credit, where the GPUs are real and
//     an MPS control daemon runs: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE = its share and
//     CUDA_MPS_PINNED_DEVICE_MEM_LIMIT = its share of each GPU's memory.
// What was applied, and why the rest was not, is one line the agent reports with the task
// (`tessera describe`'s Isolation line).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "spec/protocol.h"

namespace tessera {

// cgroup v2 cpu.weight (1..10000) for a task asking `cpu_milli`; 1 when oversold.
int CpuWeightFor(std::int64_t cpu_milli, bool oversold);

// Whether CUDA MPS can be used for this node's tasks, and why not.
struct MpsSupport {
  bool available = false;
  std::string pipe_dir;  // the control daemon's CUDA_MPS_PIPE_DIRECTORY
  std::string reason;    // when not available
};
// `simulated_gpus`: the agent's GPUs are simulated (no CUDA device to share). `pipe_dir`: the
// daemon's pipe directory (CUDA_MPS_PIPE_DIRECTORY, default /tmp/nvidia-mps).
MpsSupport DetectMps(bool simulated_gpus, const std::string& pipe_dir);

// The MPS variables for `t` on GPUs of `gpu_memory_mib` each; none when MPS is not available or
// the task holds whole GPUs and is not oversold. CUDA_VISIBLE_DEVICES renumbers the task's GPUs
// from 0, so the memory limits name devices 0..n-1.
std::map<std::string, std::string> MpsEnvironment(const TaskLaunch& t, const MpsSupport& mps,
                                                  std::int64_t gpu_memory_mib);

// The MPS part of the task's isolation line.
std::string MpsSummary(const TaskLaunch& t, const MpsSupport& mps, std::int64_t gpu_memory_mib);

}  // namespace tessera
