// A live export's replay against what the live cluster decided: per unit, the live bind time
// and nodes beside the simulator's, and how many decisions agree. The k-th bind (preemption,
// resize) of a unit live is paired with its k-th in the replay; a bind or resize agrees when
// every rank is on the same node and GPUs, a preemption when it was made for the same job.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/live_export.h"
#include "sim/replay_simulation.h"

namespace tessera {

struct DecisionCounts {
  int live = 0;
  int simulated = 0;
  int agree = 0;
};

struct UnitComparison {
  std::size_t unit = 0;  // index into LiveExport::jobs
  Tick live_bound = -1;  // first bind, ms since the first submit; -1: never
  Tick simulated_bound = -1;
  std::vector<std::string> live_nodes, simulated_nodes;  // of the first bind, by rank
  bool agree = false;  // every bind, preemption and resize of the unit agrees
};

struct ExportComparison {
  DecisionCounts binds, preemptions, resizes;
  std::vector<UnitComparison> units;
  int decisions_live() const { return binds.live + preemptions.live + resizes.live; }
  int decisions_agree() const { return binds.agree + preemptions.agree + resizes.agree; }
};

ExportComparison CompareWithLive(const LiveExport& live, const ReplayResult& replay);

// The comparison as summary.json holds it ("comparison"), with the export's notes.
nlohmann::json ExportComparisonJson(const LiveExport& live, const ExportComparison& c);

}  // namespace tessera
