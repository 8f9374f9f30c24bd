// A live cluster's export (`tessera export`, server/live_export.h) read for a replay in the
// simulator (`tessera sim --experiment replay --from-export FILE`): the exported nodes as the
// scheduler's cluster (in the controller's node order, with its GPU models and topology
// levels), one simulator job per unit the controller scheduled alone (a gang, a BatchJob's
// task, an autoscaled service's replica) arriving at its live submit time and running for as
// long as it held its GPUs live, the controller's policies, seed and queue tree, and the
// scheduling cycles recorded in its event log (clock and seed), at which alone the replay
// schedules. What the live cluster decided is kept for the comparison (export_comparison.h).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/cluster.h"
#include "core/status.h"
#include "core/task_place_text.h"
#include "core/workload.h"
#include "sim/replay_simulation.h"

namespace tessera {

// One decision the live cluster made, as its cycle's record lists it (or, for binds a
// truncated record left out, as its tasks show it).
struct LiveDecision {
  Tick time = 0;  // the cycle's clock
  std::uint64_t cycle = 0;
  Decision::Kind kind = Decision::Kind::kBind;
  std::size_t unit = 0;       // index into LiveExport::jobs
  std::vector<TaskPlace> on;  // kBind, kResize: each rank's node and GPUs
  std::string by;             // kPreempt: "QUEUE/NAME" of the job it was preempted for
  bool from_tasks = false;    // not in a (truncated) record: read from the tasks
};

struct LiveExport {
  Cluster cluster;
  std::vector<Workload> jobs;      // ids 0..n-1: one per scheduled unit
  std::vector<std::string> names;  // parallel: "QUEUE/NAME" (+ "#U" for a task or replica)
  ReplayOptions options;           // policies, seed, queue tree and the recorded cycles
  Tick exported_at = 0;
  std::vector<LiveDecision> decisions;  // in time order
  int truncated_records = 0;
  // What the replay leaves out or cannot reproduce, for the summary.
  std::vector<std::string> notes;
};

// Reads an export document; errors name the field ("jobs[3].spec: ...") and the reason.
Result<LiveExport> ReadLiveExport(const nlohmann::json& doc);
// Reads the file (JSON) and then the document; errors name the file.
Result<LiveExport> LoadLiveExport(const std::string& path);

}  // namespace tessera
