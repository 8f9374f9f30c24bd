// The agent protocol and node liveness: registration, heartbeats (one node, or every node an
// agent emulates, in one commit and one long poll), task reports, the run/stop/forget lists
// each agent gets back, and the check that marks silent nodes Lost and recovers their units.
//
// Thread-safety: every method takes the core's mutex; long polls wait on `changed`.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <unordered_map>

#include "server/api_error.h"
#include "server/controller_core.h"
#include "spec/protocol.h"

namespace tessera {

class AgentService {
 public:
  explicit AgentService(ControllerCore& core) : core_(core) {}

  ApiResult<RegistrationReply> Register(const NodeRegistration& reg);
  // Every node of the batch in one commit, or none (the error names the node and the field).
  ApiResult<RegistrationReply> RegisterNodes(const NodesRegistration& regs);
  // Whether the caller may act for a node (its credential covers it); empty: any node.
  using NodeScope = std::function<bool(const std::string&)>;
  // Records the agent's view of its tasks and answers with what should run and stop there.
  // When there is nothing new for the agent, waits up to `wait_ms` for something to change.
  ApiResult<HeartbeatReply> Heartbeat(const std::string& node, const HeartbeatRequest& req,
                                      Tick wait_ms);
  // The same for every node one agent process emulates (--simulate-nodes): one commit, one
  // long poll that ends when any of them has news. A delta (protocol.h) answers the changed
  // nodes registered with its agent URL that `may_act_for` allows.
  ApiResult<NodesHeartbeatReply> HeartbeatNodes(const NodesHeartbeatRequest& req, Tick wait_ms,
                                                const NodeScope& may_act_for = {});
  ApiResult<nlohmann::json> ReportTask(const std::string& node, const TaskReport& report);
  // Several task reports (exits) of the nodes one agent emulates, recorded in one commit; not
  // a full view: tasks it does not mention are left as they are.
  ApiResult<nlohmann::json> ReportTasks(const NodesHeartbeatRequest& reports);

  // Marks nodes that missed the heartbeat timeout Lost and recovers their units.
  void CheckLiveness();

 private:
  Status CheckLocked(const NodeRegistration& reg, std::string* model) const;
  void PutRegistrationLocked(const NodeRegistration& reg, const std::string& model,
                             ChangeBuilder& change);
  // After the commit: the nodes' heartbeat clocks start now. REQUIRES: mu held.
  RegistrationReply RegistrationReplyLocked(const std::vector<std::string>& nodes, int registered);
  ApiResult<NodesHeartbeatReply> FullHeartbeatNodes(const NodesHeartbeatRequest& req, Tick wait_ms);
  ApiResult<NodesHeartbeatReply> DeltaHeartbeatNodes(const NodesHeartbeatRequest& req, Tick wait_ms,
                                                     const NodeScope& may_act_for);
  // Records one node's heartbeat into `change`; returns whether its agent runs tasks it
  // should not (strays). `full_view`: `req` lists every task of the node (tasks it leaves out
  // are ended); otherwise only the changed ones. REQUIRES: mu held.
  bool RecordHeartbeatLocked(RegisteredNode& node, const HeartbeatRequest& req, bool full_view,
                             ChangeBuilder& change);
  // Live tasks of `node` its agent did not report: Stopping ones are Stopped (they never ran),
  // Running ones Lost. REQUIRES: mu held.
  void EndUnreportedTasksLocked(const std::string& node, const std::set<std::int64_t>& reported,
                                ChangeBuilder& change);
  // What `node`'s agent should run, stop and forget; `news` says whether any of it is new to
  // the agent (`delta`: `req` holds only changed reports). REQUIRES: mu held.
  HeartbeatReply ReplyForLocked(const std::string& node, const HeartbeatRequest& req, bool delta,
                                bool* news) const;
  TaskLaunch LaunchOfLocked(const TaskRecord& task) const;
  // Marks one node Lost with its live tasks, in one commit. REQUIRES: mu held.
  void MarkLostLocked(const std::string& name, RegisteredNode& node, Tick now);
  // Whether `report` is older (TaskReport::seq) than one already applied for its task: a
  // heartbeat built before an exit and answered after it. Remembers `report`'s seq when it is
  // newer. REQUIRES: mu held.
  bool StaleLocked(const TaskReport& report);

  ControllerCore& core_;
  // The seq of the newest report applied per task; in memory only (a restarted controller
  // takes each agent's next report as it comes).
  std::unordered_map<std::int64_t, std::int64_t> report_seq_;
};

}  // namespace tessera
