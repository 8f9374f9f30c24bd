#include "server/node_operations.h"

#include <set>

#include "server/unit_lifecycle.h"

namespace tessera {

namespace {

// Stops every running unit with a live task on `node`, to be requeued (and recovered).
std::vector<std::string> StopUnitsOn(ChangeBuilder& change, const ControllerState& state,
                                     const std::string& node, Tick now) {
  std::set<std::pair<std::int64_t, int>> units;
  if (auto live = state.live_by_node.find(node); live != state.live_by_node.end()) {
    for (auto id : live->second) {
      const TaskRecord& t = state.tasks.at(id);
      units.insert({t.job_id, t.unit});
    }
  }
  std::vector<std::string> stopped;
  for (const auto& [job_id, u] : units) {
    const JobState& job = state.jobs.at(job_id);
    if (change.Unit(job, u).phase != UnitPhase::kRunning) continue;
    const std::string why = "node " + node + " drained by the operator";
    change.Event("JobDraining", JobObject(job.rec), why + "; the gang moves off it");
    StopUnit(change, job, u, UnitPhase::kPending, why, now);
    stopped.push_back(JobObject(job.rec).substr(4));  // "queue/name"
  }
  return stopped;
}

}  // namespace

ApiResult<nlohmann::json> NodeOperations::Apply(const std::string& node, NodeOperation op) {
  std::lock_guard lock(core_.mu);
  ControllerState& state = core_.state;
  auto it = state.nodes.find(node);
  if (it == state.nodes.end()) {
    return std::unexpected(ApiErr(NotFound("node " + node + " is not registered")));
  }
  ChangeBuilder change(state);
  NodeRecord rec = it->second.rec;
  rec.cordoned = op != NodeOperation::kUncordon;
  const char* type = op == NodeOperation::kCordon     ? "NodeCordoned"
                     : op == NodeOperation::kUncordon ? "NodeUncordoned"
                                                      : "NodeDrained";
  std::vector<std::string> stopped;
  if (op == NodeOperation::kDrain) stopped = StopUnitsOn(change, state, node, core_.Now());
  change.Event(
      type, "node/" + node,
      op == NodeOperation::kUncordon ? "schedulable again"
      : op == NodeOperation::kCordon
          ? "cordoned: no new work; running work goes on"
          : "drained: cordoned, " + std::to_string(stopped.size()) + " running unit(s) moved off");
  change.PutNode(std::move(rec));
  change.RequestSchedule();
  if (auto s = core_.CommitLocked(change); !s) return std::unexpected(ApiErr(s.error()));
  return nlohmann::json{
      {"node", node}, {"cordoned", op != NodeOperation::kUncordon}, {"stopped", stopped}};
}

}  // namespace tessera
