// Volcano Job (batch.volcano.sh/v1alpha1). A gang (minAvailable = every replica) of identical
// tasks becomes a TrainingJob; of different tasks, an RLJob with a role per task (roles are
// co-scheduled as one group); minAvailable 1 over one task's replicas, a BatchJob.
#include "spec/import_translation.h"
#include "spec/text.h"

namespace tessera {

namespace {

using namespace import;

struct VolcanoTask {
  std::string name;
  int replicas = 1;
  PodTask task;
  std::string path;
  bool completes_job = false;  // policy TaskCompleted -> CompleteJob
};

// A lifecycle policy Tessera's own behaviour matches, or a refusal. Returns true for
// TaskCompleted -> CompleteJob (the caller decides whether it maps).
bool ReadPolicies(const Json& owner, const std::string& path, Translation& t, Json& s) {
  const Json* policies = t.List(owner, path, "policies");
  if (policies == nullptr) return false;
  bool completes = false;
  for (std::size_t i = 0; i < policies->size(); ++i) {
    const std::string f = path + ".policies[" + std::to_string(i) + "]";
    const Json& p = (*policies)[i];
    if (!p.is_object()) {
      t.Refuse(f, "must be a mapping {event, action}");
      continue;
    }
    t.Keys(p, f, {"event", "events", "action", "exitCode"}, {{"timeout", "Tessera acts at once"}});
    std::vector<std::string> events;
    if (auto e = t.String(p, f, "event")) events.push_back(*e);
    if (const Json* list = t.List(p, f, "events")) {
      for (const auto& e : *list) events.push_back(e.is_string() ? e.get<std::string>() : "?");
    }
    const std::string action = t.String(p, f, "action").value_or("");
    if (p.contains("exitCode") || events.empty()) {
      t.Refuse(f, "policies on exit codes are not supported; a task exiting non-zero fails");
      continue;
    }
    for (const auto& event : events) {
      const bool failure = event == "PodFailed" || event == "PodEvicted" || event == "TaskFailed" ||
                           event == "Unknown";
      if (failure && (action == "RestartJob" || action == "RestartTask")) {
        t.Map(f, event + " -> " + action +
                     ": Tessera restarts the whole gang after a failed or "
                     "lost task, up to spec.maxRestarts");
      } else if (failure && (action == "AbortJob" || action == "TerminateJob")) {
        s["maxRestarts"] = 0;
        t.Map(f, event + " -> " + action + ": spec.maxRestarts = 0 (the job fails at once)");
      } else if (event == "TaskCompleted" && (action == "CompleteJob")) {
        completes = true;
      } else {
        t.Refuse(f, "event " + Quote(event) + " with action " + Quote(action) +
                        " is not supported (supported: PodFailed/PodEvicted/TaskFailed with "
                        "RestartJob or AbortJob, TaskCompleted with CompleteJob)");
      }
    }
  }
  return completes;
}

std::optional<VolcanoTask> ReadTask(const Json& task, const std::string& path, Translation& t,
                                    Json& s) {
  if (!task.is_object()) {
    t.Refuse(path, "must be a mapping");
    return std::nullopt;
  }
  t.Keys(task, path,
         {"name", "replicas", "minAvailable", "template", "policies", "maxRetry", "dependsOn",
          "partitionPolicy"},
         {{"topologyPolicy", "NUMA placement within a node is the node's own"}});
  for (const char* key : {"dependsOn", "partitionPolicy"}) {
    if (task.contains(key)) {
      t.Refuse(path + "." + key, "not supported: every task of the job starts together");
    }
  }
  VolcanoTask out;
  out.path = path;
  out.name = t.String(task, path, "name").value_or("");
  out.replicas = static_cast<int>(t.Int(task, path, "replicas", 1, kMaxTasksPerJob).value_or(1));
  if (auto m = t.Int(task, path, "minAvailable", 0, kMaxTasksPerJob); m && *m != out.replicas) {
    t.Refuse(path + ".minAvailable",
             "a part of a task's replicas cannot start on its own; "
             "minAvailable must equal replicas");
  }
  if (auto r = t.Int(task, path, "maxRetry", 0, kMaxRestartsLimit)) {
    s["maxRestarts"] = *r;
    t.Map(path + ".maxRetry", "-> spec.maxRestarts");
  }
  out.completes_job = ReadPolicies(task, path, t, s);
  if (!task.contains("template")) {
    t.Refuse(path + ".template", "required");
    return std::nullopt;
  }
  auto pod = TranslatePodTemplate(task["template"], path + ".template", t);
  if (!pod) return std::nullopt;
  out.task = std::move(*pod);
  return out;
}

// plugins: pytorch and env are what Tessera does anyway; svc has no equivalent it needs.
bool ReadPlugins(const Json& spec, Translation& t) {
  const Json* plugins = t.Object(spec, "spec", "plugins");
  if (plugins == nullptr) return false;
  bool env = false;
  for (const auto& [name, args] : plugins->items()) {
    const std::string f = "spec.plugins." + name;
    if (name == "pytorch") {
      t.Map(f, "MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK are set by Tessera");
    } else if (name == "env") {
      env = true;
      t.Map(f, "VC_TASK_INDEX and VK_TASK_INDEX are set (the index within the task)");
    } else if (name == "svc") {
      t.Ignore(f, "no per-task host names; tasks find rank 0 at MASTER_ADDR:MASTER_PORT");
    } else {
      t.Refuse(f, name == "ssh" ? "Tessera does not set up ssh between tasks (mpirun over ssh "
                                  "cannot start ranks); start one process per task instead"
                                : "plugin " + Quote(name) + " is not supported");
    }
  }
  return env;
}

// The env plugin's VC_TASK_INDEX / VK_TASK_INDEX: a pod's index within its Volcano task. In
// an RLJob that is ROLE_RANK; tasks merged into one TrainingJob or BatchJob are told apart by
// the worker's rank, task by task.
std::string TaskIndexExports(const std::vector<VolcanoTask>& tasks, const std::string& kind) {
  if (kind == "RLJob") return "export VC_TASK_INDEX=\"$ROLE_RANK\" VK_TASK_INDEX=\"$ROLE_RANK\"; ";
  std::string sh;
  int start = 0;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const int end = start + tasks[i].replicas;
    sh += (i == 0 ? "if" : "elif") + std::string(" [ \"$NODE_RANK\" -lt ") + std::to_string(end) +
          " ]; then i=$((NODE_RANK - " + std::to_string(start) + ")); ";
    start = end;
  }
  return sh + "fi; export VC_TASK_INDEX=\"$i\" VK_TASK_INDEX=\"$i\"; ";
}

}  // namespace

Result<ImportedJob> ImportVolcanoJob(const Json& doc, const ImportOptions& options) {
  Translation t("Volcano Job (batch.volcano.sh/v1alpha1)");
  t.Keys(doc, "", {"apiVersion", "kind", "metadata", "spec"},
         {{"status", "status is Tessera's to keep"}});
  Json meta = TranslateMetadata(doc, /*namespace_is_queue=*/false, t);
  const Json* spec = t.Object(doc, "", "spec");
  if (spec == nullptr) {
    t.Refuse("spec", "required");
    return t.Finish({}, false);
  }
  const std::string P = "spec";
  t.Keys(*spec, P,
         {"tasks", "minAvailable", "queue", "priorityClassName", "maxRetry", "policies", "plugins",
          "minSuccess", "networkTopology"},
         {{"schedulerName", "Tessera is the scheduler"},
          {"volumes", "host processes see the node's file system; no volumes are mounted"},
          {"ttlSecondsAfterFinished", "finished jobs stay until `tessera purge`"},
          {"runningEstimate", "Tessera does not use run-time estimates"}});
  if (spec->contains("networkTopology")) {
    t.Refuse("spec.networkTopology",
             "hyperNode tiers are not Tessera's topology levels; use "
             "spec.topology {require, prefer} in a Tessera spec");
  }
  Json s = Json::object();
  if (auto q = t.String(*spec, P, "queue")) {
    if (!ValidQueuePath(*q)) {
      t.Refuse("spec.queue",
               "queue names are lower-case letters, digits and '-', got " + Quote(*q));
    } else {
      meta["queue"] = *q;
      t.Map("spec.queue", "-> metadata.queue");
    }
  }
  if (auto c = t.String(*spec, P, "priorityClassName")) {
    if (auto p = PriorityOfClass(*c, "spec.priorityClassName", options, t)) s["priority"] = *p;
  }
  if (auto r = t.Int(*spec, P, "maxRetry", 0, kMaxRestartsLimit)) {
    s["maxRestarts"] = *r;
    t.Map("spec.maxRetry", "-> spec.maxRestarts (gang restarts)");
  }
  const bool job_completes = ReadPolicies(*spec, P, t, s);
  const bool env_plugin = ReadPlugins(*spec, t);
  std::vector<VolcanoTask> tasks;
  const Json* list = t.List(*spec, P, "tasks");
  if (list == nullptr || list->empty()) t.Refuse("spec.tasks", "required: at least one task");
  if (list != nullptr) {
    for (std::size_t i = 0; i < list->size(); ++i) {
      auto task = ReadTask((*list)[i], "spec.tasks[" + std::to_string(i) + "]", t, s);
      if (task) tasks.push_back(std::move(*task));
    }
  }
  if (!t.ok() || tasks.empty()) return t.Finish({}, false);
  int total = 0;
  bool same = true;
  for (const auto& task : tasks) {
    total += task.replicas;
    same = same && task.task.SameAs(tasks.front().task);
  }
  const auto min_available = t.Int(*spec, P, "minAvailable", 0, kMaxTasksPerJob).value_or(total);
  if (auto m = t.Int(*spec, P, "minSuccess", 1, kMaxTasksPerJob); m && *m != total) {
    t.Refuse("spec.minSuccess",
             "a job succeeds when every task exits 0; minSuccess must be the "
             "number of replicas (" +
                 std::to_string(total) + ")");
  }
  std::string kind;
  PodTask task = tasks.front().task;
  if (tasks.size() == 1 && min_available == 1 && total > 1) {
    kind = "BatchJob";
    s["tasks"] = total;
    t.Map("spec.minAvailable", "1 -> BatchJob: each of the " + std::to_string(total) +
                                   " replicas is scheduled on its own");
  } else if (min_available != total) {
    t.Refuse("spec.minAvailable", "must be every replica (" + std::to_string(total) +
                                      ", a gang that starts all at "
                                      "once) or 1 with one task (independent replicas), got " +
                                      std::to_string(min_available));
  } else if (same) {
    kind = "TrainingJob";
    s["workers"] = total;
    t.Map("spec.tasks", "-> TrainingJob, spec.workers = " + std::to_string(total) +
                            " (minAvailable: all start at once)");
    const bool rank0_completes = tasks.front().completes_job && tasks.front().replicas == 1;
    if (rank0_completes || (job_completes && total == 1)) {
      s["successPolicy"] = "Rank0";
      t.Map(tasks.front().path + ".policies",
            "TaskCompleted -> CompleteJob: spec.successPolicy Rank0");
    }
  } else {
    kind = "RLJob";
    Json roles = Json::array();
    for (const auto& vt : tasks) {
      if (vt.task.env != task.env || vt.task.working_dir != task.working_dir) {
        t.Refuse(vt.path + ".template",
                 "tasks with different environments or working "
                 "directories: the roles of one job share spec.env");
      }
      Json role = {{"name", vt.name},
                   {"workers", vt.replicas},
                   {"gpusPerWorker", vt.task.gpus.is_null() ? Json(0) : vt.task.gpus},
                   {"command", vt.task.command}};
      if (!vt.task.cpu.is_null()) role["cpu"] = vt.task.cpu;
      if (!vt.task.memory.is_null()) role["memory"] = vt.task.memory;
      roles.push_back(std::move(role));
    }
    s["roles"] = std::move(roles);
    t.Map("spec.tasks", "-> RLJob, a role per task, co-scheduled as one gang");
  }
  for (const auto& vt : tasks) {
    if (vt.completes_job && s.value("successPolicy", "") != "Rank0") {
      t.Refuse(vt.path + ".policies",
               "TaskCompleted -> CompleteJob is supported for a first "
               "task of one replica in a gang of identical tasks only");
    }
  }
  if (!t.ok()) return t.Finish({}, false);
  const std::string prefix = env_plugin ? TaskIndexExports(tasks, kind) : "";
  auto wrap = [&](std::vector<std::string> argv) {
    if (prefix.empty()) return argv;
    std::vector<std::string> out = {"/bin/sh", "-c", prefix + "exec \"$@\"", "vcjob"};
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
  };
  if (kind == "RLJob") {
    for (auto& role : s["roles"]) role["command"] = wrap(role["command"]);
    PodTask shared = task;
    shared.command = {};
    PutPodTask(shared, "unused", options, s);
    s.erase("unused");
    s.erase("command");
    s.erase("cpu");
    s.erase("memory");
  } else {
    task.command = wrap(task.command);
    PutPodTask(task, kind == "BatchJob" ? "gpusPerTask" : "gpusPerWorker", options, s);
  }
  return t.Finish({{"apiVersion", "tessera/v1"}, {"kind", kind}, {"metadata", meta}, {"spec", s}},
                  false);
}

}  // namespace tessera
