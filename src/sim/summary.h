// summary.json: the machine-readable result of a `tessera sim` run. Its shape is an interface
// (docs/summary-json.md): fields are only ever added. Wall-clock fields end in "_wall_seconds"
// so that determinism checks can drop them.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cluster.h"
#include "sim/allocation_experiment.h"
#include "sim/replay_simulation.h"

namespace tessera {

struct SummaryHeader {
  std::string experiment;  // allocation | replay | ...
  std::string trace_path;
  std::size_t trace_jobs = 0;
  std::string trace_format;
  std::int64_t skipped_rows = 0;
  std::string cluster_spec;
};

nlohmann::json SummaryHead(const SummaryHeader& h, const Cluster& cluster);
nlohmann::json AllocationResultJson(const AllocationPolicyResult& r);
nlohmann::json ReplayResultJson(const ReplayResult& r);

// Removes every "*_wall_seconds" field, recursively: what remains is identical across runs
// with the same inputs and seeds.
nlohmann::json WithoutWallClock(nlohmann::json j);

}  // namespace tessera
