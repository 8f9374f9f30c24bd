// Turns a trace's jobs into the workload of a policy comparison (`tessera bench policies`):
// which jobs are elastic, and the relative speed of each GPU model. Traces record neither, so
// the experiment states them as inputs (docs/elastic.md, docs/heterogeneous.md).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/cluster.h"
#include "core/status.h"
#include "core/workload.h"

namespace tessera {

// Makes every job of one group of at least two whole-node workers elastic, with
// min_workers = ceil(min_fraction × workers) and max_workers = ceil(max_fraction × workers).
// REQUIRES: 0 < min_fraction <= 1 <= max_fraction. Returns how many jobs it changed.
std::size_t MakeMultiNodeJobsElastic(std::vector<Workload>& jobs, double min_fraction,
                                     double max_fraction);

// "H100=1,A100=0.55,V100=0.3": every job accepts the listed models (those it accepted before,
// when it named some) at these relative speeds; run times in the trace are at speed 1.
Result<std::vector<std::pair<std::string, double>>> ParseGpuSpeeds(const std::string& text);
void SetGpuSpeeds(std::vector<Workload>& jobs, const Cluster& cluster,
                  const std::vector<std::pair<std::string, double>>& speeds);

}  // namespace tessera
