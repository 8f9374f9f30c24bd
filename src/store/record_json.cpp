#include "store/record_json.h"

#include <algorithm>

namespace tessera {

namespace {

using Json = nlohmann::json;

// Reads fields of one object, remembering the first that was missing or mistyped.
class Fields {
 public:
  Fields(const Json& j, const char* what) : j_(j), what_(what) {
    if (!j_.is_object()) problem_ = std::string(what_) + ": not a JSON object";
  }
  template <typename T>
  void Get(const char* key, T& out) {
    if (!problem_.empty()) return;
    auto it = j_.find(key);
    bool ok = it != j_.end();
    if constexpr (std::is_same_v<T, bool>) {
      ok = ok && it->is_boolean();
    } else if constexpr (std::is_integral_v<T>) {
      ok = ok && it->is_number_integer();
    } else if constexpr (std::is_same_v<T, std::string>) {
      ok = ok && it->is_string();
    } else {
      ok = ok && it->is_array() &&
           std::all_of(it->begin(), it->end(), [](const Json& v) { return v.is_number_integer(); });
    }
    if (!ok) {
      problem_ = std::string(what_) + "." + key + ": missing or of the wrong type";
      return;
    }
    out = it->get<T>();
  }
  Status Done() const {
    if (problem_.empty()) return {};
    return IoError("etcd store: " + problem_);
  }

 private:
  const Json& j_;
  const char* what_;
  std::string problem_;
};

template <typename T>
Result<T> Finish(const Fields& f, T value) {
  if (auto s = f.Done(); !s) return std::unexpected(s.error());
  return value;
}

}  // namespace

std::string RecordText(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Json ToJson(const QueueRecord& r) { return {{"name", r.name}, {"createdMs", r.created_ms}}; }

Json ToJson(const NodeCredentialRecord& r) { return {{"node", r.node}, {"digest", r.digest}}; }

Json ToJson(const JobRecord& r) {
  return {{"id", r.id},
          {"queue", r.queue},
          {"name", r.name},
          {"kind", r.kind},
          {"spec", r.spec_json},
          {"submitMs", r.submit_ms},
          {"cancelRequested", r.cancel_requested},
          {"held", r.held},
          {"finishedMs", r.finished_ms},
          {"message", r.message}};
}

Json ToJson(const UnitRecord& r) {
  return {{"jobId", r.job_id},
          {"unit", r.unit},
          {"phase", UnitPhaseName(r.phase)},
          {"stopTarget", UnitPhaseName(r.stop_target)},
          {"attempt", r.attempt},
          {"restarts", r.restarts},
          {"pendingSinceMs", r.pending_since_ms},
          {"startedMs", r.started_ms},
          {"firstStartedMs", r.first_started_ms},
          {"finishedMs", r.finished_ms},
          {"exitCode", r.exit_code},
          {"message", r.message},
          {"resize", r.resize}};
}

Json ToJson(const TaskRecord& r) {
  return {{"id", r.id},
          {"jobId", r.job_id},
          {"unit", r.unit},
          {"attempt", r.attempt},
          {"rank", r.rank},
          {"node", r.node},
          {"gpus", r.gpus},
          {"gpuMilli", r.gpu_milli},
          {"cpuMilli", r.cpu_milli},
          {"memoryMib", r.memory_mib},
          {"state", TaskStateName(r.state)},
          {"exitCode", r.exit_code},
          {"signal", r.signal},
          {"pid", r.pid},
          {"createdMs", r.created_ms},
          {"startedMs", r.started_ms},
          {"finishedMs", r.finished_ms},
          {"message", r.message},
          {"masterAddr", r.master_addr},
          {"masterPort", r.master_port},
          {"oversold", r.oversold}};
}

Json ToJson(const NodeRecord& r) {
  return {{"name", r.name},
          {"address", r.address},
          {"agentUrl", r.agent_url},
          {"gpuModel", r.gpu_model},
          {"gpuCount", r.gpu_count},
          {"simulated", r.simulated},
          {"cpuMilli", r.cpu_milli},
          {"memoryMib", r.memory_mib},
          {"gpus", r.gpus_json},
          {"topology", r.topology_json},
          {"cordoned", r.cordoned},
          {"status", NodeStatusName(r.status)},
          {"registeredMs", r.registered_ms},
          {"version", r.version},
          {"message", r.message}};
}

Json ToJson(const EventRecord& r) {
  return {{"seq", r.seq},
          {"timeMs", r.time_ms},
          {"type", r.type},
          {"object", r.object},
          {"message", r.message}};
}

Result<NodeCredentialRecord> NodeCredentialRecordFromJson(const Json& j) {
  NodeCredentialRecord r;
  Fields f(j, "node credential");
  f.Get("node", r.node);
  f.Get("digest", r.digest);
  return Finish(f, std::move(r));
}

Result<QueueRecord> QueueRecordFromJson(const Json& j) {
  QueueRecord r;
  Fields f(j, "queue");
  f.Get("name", r.name);
  f.Get("createdMs", r.created_ms);
  return Finish(f, std::move(r));
}

Result<JobRecord> JobRecordFromJson(const Json& j) {
  JobRecord r;
  Fields f(j, "job");
  f.Get("id", r.id);
  f.Get("queue", r.queue);
  f.Get("name", r.name);
  f.Get("kind", r.kind);
  f.Get("spec", r.spec_json);
  f.Get("submitMs", r.submit_ms);
  f.Get("cancelRequested", r.cancel_requested);
  f.Get("held", r.held);
  f.Get("finishedMs", r.finished_ms);
  f.Get("message", r.message);
  return Finish(f, std::move(r));
}

Result<UnitRecord> UnitRecordFromJson(const Json& j) {
  UnitRecord r;
  Fields f(j, "unit");
  std::string phase, stop_target;
  f.Get("jobId", r.job_id);
  f.Get("unit", r.unit);
  f.Get("phase", phase);
  f.Get("stopTarget", stop_target);
  f.Get("attempt", r.attempt);
  f.Get("restarts", r.restarts);
  f.Get("pendingSinceMs", r.pending_since_ms);
  f.Get("startedMs", r.started_ms);
  f.Get("firstStartedMs", r.first_started_ms);
  f.Get("finishedMs", r.finished_ms);
  f.Get("exitCode", r.exit_code);
  f.Get("message", r.message);
  if (j.contains("resize")) f.Get("resize", r.resize);  // absent in records of older builds
  if (auto s = f.Done(); !s) return std::unexpected(s.error());
  if (!ParseUnitPhase(phase, &r.phase) || !ParseUnitPhase(stop_target, &r.stop_target))
    return IoError("etcd store: unit of job " + std::to_string(r.job_id) + ": unknown phase");
  return r;
}

Result<TaskRecord> TaskRecordFromJson(const Json& j) {
  TaskRecord r;
  Fields f(j, "task");
  std::string state;
  f.Get("id", r.id);
  f.Get("jobId", r.job_id);
  f.Get("unit", r.unit);
  f.Get("attempt", r.attempt);
  f.Get("rank", r.rank);
  f.Get("node", r.node);
  f.Get("gpus", r.gpus);
  f.Get("gpuMilli", r.gpu_milli);
  f.Get("cpuMilli", r.cpu_milli);
  f.Get("memoryMib", r.memory_mib);
  f.Get("state", state);
  f.Get("exitCode", r.exit_code);
  f.Get("signal", r.signal);
  f.Get("pid", r.pid);
  f.Get("createdMs", r.created_ms);
  f.Get("startedMs", r.started_ms);
  f.Get("finishedMs", r.finished_ms);
  f.Get("message", r.message);
  f.Get("masterAddr", r.master_addr);
  f.Get("masterPort", r.master_port);
  if (j.contains("oversold")) f.Get("oversold", r.oversold);  // absent before co-location
  if (auto s = f.Done(); !s) return std::unexpected(s.error());
  if (!ParseTaskState(state, &r.state))
    return IoError("etcd store: task " + std::to_string(r.id) + ": unknown state " + state);
  return r;
}

Result<NodeRecord> NodeRecordFromJson(const Json& j) {
  NodeRecord r;
  Fields f(j, "node");
  std::string status;
  f.Get("name", r.name);
  f.Get("address", r.address);
  f.Get("agentUrl", r.agent_url);
  f.Get("gpuModel", r.gpu_model);
  f.Get("gpuCount", r.gpu_count);
  f.Get("simulated", r.simulated);
  f.Get("cpuMilli", r.cpu_milli);
  f.Get("memoryMib", r.memory_mib);
  f.Get("gpus", r.gpus_json);
  f.Get("topology", r.topology_json);
  f.Get("cordoned", r.cordoned);
  f.Get("status", status);
  f.Get("registeredMs", r.registered_ms);
  f.Get("version", r.version);
  f.Get("message", r.message);
  if (auto s = f.Done(); !s) return std::unexpected(s.error());
  if (!ParseNodeStatus(status, &r.status)) r.status = NodeStatus::kNotReady;
  return r;
}

Result<EventRecord> EventRecordFromJson(const Json& j) {
  EventRecord r;
  Fields f(j, "event");
  f.Get("seq", r.seq);
  f.Get("timeMs", r.time_ms);
  f.Get("type", r.type);
  f.Get("object", r.object);
  f.Get("message", r.message);
  return Finish(f, std::move(r));
}

}  // namespace tessera
