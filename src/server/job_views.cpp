#include "server/job_views.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <utility>

#include "server/change_builder.h"
#include "server/job_gates.h"
#include "spec/document.h"
#include "spec/protocol.h"

namespace tessera {

using Json = nlohmann::json;
using api::JobPhase;

std::string GpusText(double gpus) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", gpus);
  return buf;
}

JobPhase JobPhaseOf(const JobState& job) {
  return JobPhaseOfUnits(job.units, job.rec.cancel_requested);
}

std::string ReplicaEndpoint(const ControllerState& state, const TaskRecord& task) {
  std::string address = task.master_addr;
  if (auto n = state.nodes.find(task.node);
      n != state.nodes.end() && !n->second.rec.address.empty())
    address = n->second.rec.address;
  return "http://" + address + ":" +
         std::to_string(InferenceReplicaPort(task.master_port, task.rank));
}

Json TaskJson(const ControllerState& state, const TaskRecord& t) {
  Json j = {{"id", t.id},
            {"rank", t.rank},
            {"attempt", t.attempt},
            {"node", t.node},
            {"gpus", t.gpus},
            {"state", std::string(TaskStateName(t.state))},
            {"exitCode", t.exit_code},
            {"signal", t.signal},
            {"pid", t.pid},
            {"createdMs", t.created_ms},
            {"startedMs", t.started_ms},
            {"finishedMs", t.finished_ms},
            {"masterAddr", t.master_addr},
            {"masterPort", t.master_port}};
  if (t.gpu_milli < kMilliPerGpu && !t.gpus.empty()) j["gpuMilli"] = t.gpu_milli;
  if (t.oversold) j["oversold"] = true;  // on online replicas' unused GPU (co-location)
  if (!t.message.empty()) j["message"] = t.message;
  if (IsDrainingTask(state, t)) j["draining"] = true;  // the gateway sends it nothing new
  if (auto job = state.jobs.find(t.job_id);
      job != state.jobs.end() && job->second.spec.kind == WorkloadKind::kInference)
    j["endpoint"] = ReplicaEndpoint(state, t);
  auto n = state.nodes.find(t.node);
  if (n != state.nodes.end() && n->second.rec.simulated) j["simulatedGpus"] = true;
  return j;
}

namespace {

// Why a pending job (or a batch job with tasks still pending) is not running; empty if the
// last cycle did not say.
std::string PendingMessage(const ControllerState& state, const JobState& job) {
  if (job.never_fits) return "unschedulable: " + *job.never_fits;
  if (!job.waiting) return "";
  const bool tasks = job.spec.IndependentTasks();
  const std::int64_t need =
      tasks ? job.workload.groups[0].shape.Total().gpu_milli : job.workload.TotalGpuMilli();
  if (need == 0) {  // free GPUs say nothing about a job that needs none
    const Resources r = job.workload.groups[0].shape.Total();
    return "waiting for capacity: needs no GPU but " + GpusText(r.cpu_milli / 1000.0) +
           " CPU and " + std::to_string(r.memory_mib) + " MiB of memory" +
           (tasks ? " per task" : " per worker") +
           " on one schedulable node (or jobs ahead in the queue)";
  }
  return "waiting for capacity: needs " + GpusText(static_cast<double>(need) / kMilliPerGpu) +
         " GPU(s)" + (tasks ? " per task" : " in one gang") + "; " +
         GpusText(static_cast<double>(state.last_free_gpu_milli) / kMilliPerGpu) +
         " free on schedulable nodes (or jobs ahead in the queue)";
}

}  // namespace

Json JobSummary(const ControllerState& state, const JobState& job) {
  const Workload& w = job.workload;
  int attempt = 0, restarts = 0, running = 0;
  Tick started = 0;
  std::string message = job.rec.message;
  for (const auto& u : job.units) {
    attempt = std::max(attempt, u.attempt);
    restarts += u.restarts;
    if (u.first_started_ms > 0 && (started == 0 || u.first_started_ms < started))
      started = u.first_started_ms;
    if (message.empty() && !u.message.empty() && !IsFinal(u.phase)) message = u.message;
  }
  for (auto tid : job.tasks) running += state.tasks.at(tid).state == TaskState::kRunning;
  const JobPhase phase = JobPhaseOf(job);
  const bool held = job.rec.held && job.rec.finished_ms == 0 && phase == JobPhase::kPending;
  if (held) {
    message = "held: `tessera release " + job.rec.name + "` lets it be scheduled";
  } else if (phase == JobPhase::kPending && !job.blocked_by.empty()) {
    message = job.blocked_by;
  } else if (job.rec.finished_ms == 0 && (phase == JobPhase::kPending ||
                                          (phase == JobPhase::kRunning && job.units.size() > 1))) {
    if (std::string pending = PendingMessage(state, job); !pending.empty()) message = pending;
  }
  Json j = {{"id", job.rec.id},
            {"name", job.rec.name},
            {"queue", job.rec.queue},
            {"kind", job.rec.kind},
            {"phase", std::string(api::JobPhaseName(phase))},
            {"priority", job.spec.priority},
            {"tasks", w.TaskCount()},
            {"runningTasks", running},
            {"gpus", static_cast<double>(w.TotalGpuMilli()) / kMilliPerGpu},
            {"attempt", attempt},
            {"restarts", restarts},
            {"maxRestarts", job.spec.max_restarts},
            {"submitTimeMs", job.rec.submit_ms},
            {"startTimeMs", started},
            {"finishTimeMs", job.rec.finished_ms}};
  if (held) j["reason"] = "Held";
  if (!held && phase == JobPhase::kPending && !job.blocked_by.empty()) j["reason"] = "Dependency";
  if (phase == JobPhase::kFailed) {
    if (auto reason = FailureReasonOf(job.rec.message)) j["reason"] = *reason;
  }
  if (!message.empty()) j["message"] = message;
  if (!job.spec.user.empty()) j["user"] = job.spec.user;
  if (!job.spec.labels.empty()) j["labels"] = job.spec.labels;
  return j;
}

Json JobDetail(const ControllerState& state, const JobState& job) {
  Json j = JobSummary(state, job);
  j["spec"] = JobSpecToJson(job.spec);
  Json units = Json::array();
  for (const auto& u : job.units) {
    Json uj = {{"unit", u.unit},
               {"phase", std::string(UnitPhaseName(u.phase))},
               {"attempt", u.attempt},
               {"restarts", u.restarts},
               {"pendingSinceMs", u.pending_since_ms},
               {"startedMs", u.started_ms},
               {"finishedMs", u.finished_ms},
               {"exitCode", u.exit_code}};
    if (u.phase == UnitPhase::kStopping)
      uj["stopTarget"] = std::string(UnitPhaseName(u.stop_target));
    if (!u.message.empty()) uj["message"] = u.message;
    units.push_back(std::move(uj));
  }
  j["units"] = std::move(units);
  if (auto scale = state.scaling.find(job.rec.id); scale != state.scaling.end()) {
    const ServiceScale& sc = scale->second;
    j["autoscaling"] = {{"policy", std::string(AutoscalePolicyName(job.spec.autoscaling->policy))},
                        {"metric", std::string(AutoscaleMetricName(job.spec.autoscaling->metric))},
                        {"target", job.spec.autoscaling->target},
                        {"desiredReplicas", sc.desired},
                        {"drainingReplicas", sc.draining.size()},
                        {"lastValue", sc.last_value},
                        {"measuredReplicas", sc.last_measured}};
  }
  Json tasks = Json::array();
  for (auto tid : job.tasks) tasks.push_back(TaskJson(state, state.tasks.at(tid)));
  j["taskList"] = std::move(tasks);
  Json events = Json::array();
  const std::string object = JobObject(job.rec);
  for (const auto& e : state.events) {
    if (e.object == object) {
      events.push_back(
          {{"seq", e.seq}, {"timeMs", e.time_ms}, {"type", e.type}, {"message", e.message}});
    }
  }
  j["events"] = std::move(events);
  // The controller keeps the newest events only: say so when this job's first ones are gone.
  if (!state.events.empty() && job.rec.submit_ms < state.events.front().time_ms)
    j["eventsCutBeforeMs"] = state.events.front().time_ms;
  return j;
}

Json NodesView(const ControllerState& state, Tick now) {
  Json out = Json::array();
  std::map<std::string, Json> usage;  // node -> [{gpu, utilization, memoryUsedBytes}]
  for (const DeviceUse& d : DeviceUsesLocked(state, state.gpu_usage)) {
    usage[d.node].push_back({{"gpu", d.gpu},
                             {"utilization", d.utilization},
                             {"memoryUsedBytes", d.memory_used_bytes},
                             {"utilizationWindowMax", d.window_max_utilization}});
  }
  for (const auto& [name, ns] : state.nodes) {
    // Held shares apart from oversold ones (co-location: lent from the online replicas' unused
    // share, on GPUs those replicas hold), so that no GPU reads as more than fully allocated.
    // Per GPU index, so that a view can draw each GPU (the dashboard's cluster grid).
    std::int64_t used_milli = 0, oversold_milli = 0;
    int tasks = 0;
    const auto gpu_count = static_cast<std::size_t>(std::max(0, ns.rec.gpu_count));
    std::vector<std::int64_t> per_gpu(gpu_count), oversold_per_gpu(gpu_count);
    if (auto live = state.live_by_node.find(name); live != state.live_by_node.end()) {
      for (auto id : live->second) {
        const TaskRecord& t = state.tasks.at(id);
        (t.oversold ? oversold_milli : used_milli) +=
            static_cast<std::int64_t>(t.gpus.size()) * t.gpu_milli;
        auto& gpu_milli = t.oversold ? oversold_per_gpu : per_gpu;
        for (int g : t.gpus) {
          if (g >= 0 && g < std::ssize(gpu_milli))
            gpu_milli[static_cast<std::size_t>(g)] += t.gpu_milli;
        }
        ++tasks;
      }
    }
    Json gpus = Json::array();
    if (auto parsed = ParseJson(ns.rec.gpus_json)) gpus = *parsed;
    Json topology = Json::object();
    if (auto parsed = ParseJson(ns.rec.topology_json); parsed && parsed->is_object())
      topology = *parsed;
    Json j = {{"name", name},
              {"status", std::string(NodeStatusName(ns.rec.status))},
              {"schedulable", ns.schedulable()},
              {"cordoned", ns.rec.cordoned},
              {"address", ns.rec.address},
              {"agentUrl", ns.rec.agent_url},
              {"gpuModel", ns.rec.gpu_model},
              {"gpuCount", ns.rec.gpu_count},
              {"gpusAllocated", static_cast<double>(used_milli) / kMilliPerGpu},
              {"gpuAllocatedMilli", per_gpu},
              {"oversold", static_cast<double>(oversold_milli) / kMilliPerGpu},
              {"gpuOversoldMilli", oversold_per_gpu},
              {"simulated", ns.rec.simulated},
              {"cpuMilli", ns.rec.cpu_milli},
              {"memoryMiB", ns.rec.memory_mib},
              {"liveTasks", tasks},
              {"lastHeartbeatAgoMs", now - ns.last_seen},
              {"registeredMs", ns.rec.registered_ms},
              {"version", ns.rec.version},
              {"gpus", gpus},
              {"topology", topology}};
    if (!ns.rec.message.empty()) j["message"] = ns.rec.message;
    // What the agent reported of its GPUs' use (gpu_usage_feed.h); absent before any report.
    if (auto u = usage.find(name); u != usage.end()) j["gpuUsage"] = std::move(u->second);
    out.push_back(std::move(j));
  }
  return out;
}

Json EventJson(const EventRecord& e) {
  return {{"seq", e.seq},
          {"timeMs", e.time_ms},
          {"type", e.type},
          {"object", e.object},
          {"message", e.message}};
}

}  // namespace tessera
