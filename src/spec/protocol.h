// The controller <-> agent wire protocol (JSON over HTTP). Level-triggered: every heartbeat
// carries the agent's full view of its tasks, and every answer the controller's full view of
// what should run there, so either side may restart and the two converge on the next exchange.
//
//   POST /v1/agents/register          NodeRegistration        -> RegistrationReply
//   POST /v1/agents/{node}/heartbeat  HeartbeatRequest        -> HeartbeatReply
//   POST /v1/agents/heartbeat         NodesHeartbeatRequest   -> NodesHeartbeatReply
//     (one exchange for every node an agent emulates: tessera-agent --simulate-nodes N)
//   POST /v1/agents/status            NodesHeartbeatRequest   -> {"reports": N}
//     (several exits at once; only the tasks it names, not a full view)
//   POST /v1/agents/register-nodes    NodesRegistration       -> RegistrationReply
//     (every node of one emulating agent, up to kMaxNodesPerRegistration a request, one commit)
//
// An emulating agent's batched heartbeat has a second, delta form (NodesHeartbeatRequest::delta):
// only what changed since the generation of the last reply it applied goes either way, so its
// cost follows the changes, not the nodes and tasks that stayed as they were (KWOK / kubemark
// scale). It falls back to the full form when the controller asks (fullReport).
//
// Parsing functions never throw; malformed input is an InvalidArgument naming the field.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace tessera {

struct GpuInfo {
  int index = 0;
  std::string model;  // normalised: H100, A100, ...
  std::string name;   // as the driver reports it, or "simulated H100"
  std::string uuid;
  std::int64_t memory_mib = 0;
};

struct NodeRegistration {
  std::string node;        // [a-z0-9-], unique in the cluster
  std::string address;     // where this node's tasks are reached (MASTER_ADDR)
  std::string agent_url;   // the agent's own HTTP endpoint (task logs)
  bool simulated = false;  // GPUs are simulated, not real
  std::vector<GpuInfo> gpus;
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;
  std::string version;
  // Where the node sits: its domain at each topology level (`tessera-agent --topology
  // leaf=l3,spine=s1`); the controller checks the levels against its own. Empty: none given.
  std::map<std::string, std::string> topology;
};

// "leaf=l3,spine=s1" as a level -> domain map; the error names the bad pair.
Result<std::map<std::string, std::string>> ParseTopologyFlag(const std::string& text);

struct RegistrationReply {
  std::int64_t heartbeat_interval_ms = 1000;
  std::int64_t heartbeat_timeout_ms = 10000;
  int registered = 0;  // register-nodes: how many nodes the request registered (0 otherwise)
};

// Many nodes of one emulating agent registered in one request and one commit; all or none.
struct NodesRegistration {
  std::vector<NodeRegistration> nodes;
};
// A registration is about 1 KB (8 GPUs): 500 stay well under the controller's 1 MiB body limit.
inline constexpr std::size_t kMaxNodesPerRegistration = 500;

// The port an InferenceService replica serves on, set as TESSERA_PORT (and PORT) in its
// environment: the job's master port (unique per address among the controller's jobs) plus the
// replica's rank, so the gateway finds each replica from the controller's task list alone.
inline int InferenceReplicaPort(int master_port, int rank) { return master_port + rank; }

// What the controller asks an agent to run: one task of a job, with everything needed to
// build its argv and environment.
struct TaskLaunch {
  std::int64_t task_id = 0;
  std::string job;    // name
  std::string queue;  // queue path
  std::string kind;   // TrainingJob, ...
  int attempt = 0;
  int rank = 0;        // gang rank of this task (NODE_RANK, GROUP_RANK, TASK_INDEX)
  int task_count = 0;  // tasks in the gang
  std::string role;    // worker | replica | task | session | RL role
  int role_rank = 0;
  int role_size = 0;
  int processes = 1;              // processes of this task (LOCAL_WORLD_SIZE)
  int process_rank_base = 0;      // RANK of its first process
  int world_size = 1;             // processes in the whole gang (WORLD_SIZE)
  std::vector<int> gpus;          // GPU indices on the node
  std::int32_t gpu_milli = 1000;  // per GPU; below 1000 for a share
  std::vector<std::string> command;
  bool shell = false;
  std::map<std::string, std::string> env;  // the spec's env
  std::string master_addr;
  int master_port = 0;
  int grace_period_seconds = 30;
  std::string working_dir;
  std::string checkpoint_dir;
  int checkpoint_interval_seconds = 0;  // spec.checkpoint.intervalSeconds; 0: not stated
  // What the task was given of the node, for its cgroup's limits (docs/colocation.md,
  // isolation); 0: not stated (older controllers).
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;
  // Placed on online replicas' unused GPU share (co-location): its GPU share is lent, so it is
  // not counted against the GPU, and it gets the lower CPU weight of an oversold task.
  bool oversold = false;
};

enum class ReportedState { kRunning, kExited, kStopped, kFailedToStart, kLost };
const char* ReportedStateName(ReportedState s);

// What an agent knows about one of its tasks.
struct TaskReport {
  std::int64_t task_id = 0;
  ReportedState state = ReportedState::kRunning;
  int pid = 0;
  int exit_code = 0;  // kExited/kStopped: the exit status, 128+N when killed by signal N
  int signal = 0;     // the signal that ended it, or 0
  std::int64_t started_ms = 0;
  std::int64_t finished_ms = 0;
  std::string message;  // e.g. why it could not start
  // What isolation the agent applied to it and what was not possible (agent/task_isolation.h).
  std::string isolation;
  // Orders one agent's reports: strictly increasing across all its reports, also across its
  // restarts. Heartbeats and exit reports travel on separate connections, so one built earlier
  // can arrive later; the controller drops a task's report older than one already applied.
  // 0: unordered (an agent that does not number its reports).
  std::int64_t seq = 0;
};

// One GPU's use as the agent saw it (docs/gpu-usage.md): what a task wrote to its usage file
// (task_id, for each GPU it holds), or the device as NVML measures it (task_id 0).
struct GpuUsageReport {
  std::int64_t task_id = 0;
  int gpu = 0;
  double utilization = 0;  // 0..1 of the device
  std::int64_t memory_used_bytes = 0;
  friend bool operator==(const GpuUsageReport&, const GpuUsageReport&) = default;
};

struct HeartbeatRequest {
  std::vector<TaskReport> tasks;
  std::vector<GpuUsageReport> usage;  // checked by the controller (ranges, whose task)
};

struct TaskStop {
  std::int64_t task_id = 0;
  int grace_period_seconds = 30;
  // The task's attempt was replaced (its node was declared lost and the unit restarted):
  // SIGKILL at once, no grace period, so the old copy of a rank cannot run on (or write a
  // checkpoint on SIGTERM) beside its replacement.
  bool fence = false;
};

struct HeartbeatReply {
  std::vector<TaskLaunch> run;  // tasks that should be running here (new ones to launch)
  std::vector<TaskStop> stop;   // tasks to stop: SIGTERM, SIGKILL after the grace period
  // Tasks the agent may forget: the controller has recorded their end.
  std::vector<std::int64_t> forget;
};

// The heartbeats of many nodes served by one agent process, in one exchange: the controller
// records them in one commit and long-polls until any of them has news. The reply lists only
// nodes with something to do, and the nodes it does not know (to be registered again).
//
// Delta form (`delta`): `nodes` holds only the reports that changed since the agent last had a
// heartbeat answered (new tasks running, exits not yet forgotten), and tasks it does not mention
// are left as they are; `alive` renews the heartbeat of nodes with nothing to report (sent
// about once an interval, not with every request). The reply lists the nodes registered with
// `agent_url` whose tasks changed after generation `since` (what should run and stop there
// now) and forgets/stops for the reports sent. A `since` this controller cannot answer from
// (0, another controller's, a restart's) or a node that was Lost asks for a full report.
struct NodesHeartbeatRequest {
  std::map<std::string, HeartbeatRequest> nodes;
  bool delta = false;
  std::int64_t since = 0;          // delta: NodesHeartbeatReply::generation last applied
  std::vector<std::string> alive;  // delta: nodes kept alive that have nothing to report
  std::string agent_url;           // delta: whose nodes' changes to answer
};
struct NodesHeartbeatReply {
  std::map<std::string, HeartbeatReply> nodes;
  std::vector<std::string> unknown;
  // What the reply reflects: the agent's next delta asks for changes after it.
  std::int64_t generation = 0;
  bool full_report = false;  // send the full form next (level-triggered resync)
};

nlohmann::json ToJson(const GpuInfo& g);
nlohmann::json ToJson(const NodeRegistration& r);
nlohmann::json ToJson(const NodesRegistration& r);
nlohmann::json ToJson(const RegistrationReply& r);
nlohmann::json ToJson(const TaskLaunch& t);
nlohmann::json ToJson(const TaskReport& r);
nlohmann::json ToJson(const HeartbeatRequest& r);
nlohmann::json ToJson(const HeartbeatReply& r);
nlohmann::json ToJson(const NodesHeartbeatRequest& r);
nlohmann::json ToJson(const NodesHeartbeatReply& r);

Result<NodeRegistration> NodeRegistrationFromJson(const nlohmann::json& j);
Result<NodesRegistration> NodesRegistrationFromJson(const nlohmann::json& j);
Result<RegistrationReply> RegistrationReplyFromJson(const nlohmann::json& j);
Result<TaskLaunch> TaskLaunchFromJson(const nlohmann::json& j);
Result<TaskReport> TaskReportFromJson(const nlohmann::json& j);
Result<HeartbeatRequest> HeartbeatRequestFromJson(const nlohmann::json& j);
Result<HeartbeatReply> HeartbeatReplyFromJson(const nlohmann::json& j);
Result<NodesHeartbeatRequest> NodesHeartbeatRequestFromJson(const nlohmann::json& j);
Result<NodesHeartbeatReply> NodesHeartbeatReplyFromJson(const nlohmann::json& j);

// Parses JSON text strictly (spec/strict_json.h: duplicate keys and absurd numbers refused,
// naming the field) without throwing.
Result<nlohmann::json> ParseJson(std::string_view text);

}  // namespace tessera
