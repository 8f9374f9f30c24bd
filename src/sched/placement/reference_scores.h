// Conventions of the FGD authors' simulator (hkust-adsl/kubernetes-scheduler-simulator), which
// the FGD paper's baselines are scored by: a Kubernetes score plugin returns an integer in
// [0, 100], the framework keeps the highest and gives equal scores to the first node of an
// order fixed for the run (TieBreak::kNodeOrder). Integer scores tie often, and the ties are
// part of how each baseline behaves, so Tessera's baselines return these integers as their score.
// Node "size" is normalised by the simulator's largest node spec: 128 cores and 8 GPUs.
#pragma once

#include <cstdint>

#include "core/cluster_state.h"

namespace tessera::reference {

inline constexpr std::int64_t kMaxNodeScore = 100;      // framework.MaxNodeScore
inline constexpr double kMaxSpecCpuMilli = 128000;      // MaxSpecCpu
inline constexpr std::int64_t kMaxSpecGpuMilli = 8000;  // MaxSpecGpu

// A Go float64 → int64 conversion: truncation toward zero.
inline double Truncate(double x) { return static_cast<double>(static_cast<std::int64_t>(x)); }

}  // namespace tessera::reference
