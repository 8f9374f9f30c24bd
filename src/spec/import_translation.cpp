#include "spec/import_translation.h"

#include "spec/document.h"
#include "spec/text.h"

namespace tessera {

std::string ImportNote::ToString() const {
  return field + (ignored ? ": ignored: " : ": ") + action;
}

namespace import {

namespace {

std::string TypeName(const Json& v) {
  if (v.is_object()) return "a mapping";
  if (v.is_array()) return "a list";
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  return "null";
}

const Json* Present(const Json& obj, const std::string& key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

// Fields of a pod spec and a container that only mean something to a container runtime or
// the kubelet: host processes cannot honour them, and ignoring them changes nothing the job
// computes.
const std::map<std::string, std::string>& IgnoredPodFields() {
  static const std::map<std::string, std::string> kFields = {
      {"volumes", "host processes see the node's file system; no volumes are mounted"},
      {"imagePullSecrets", "no images are pulled"},
      {"serviceAccountName", "no Kubernetes API access is given to tasks"},
      {"serviceAccount", "no Kubernetes API access is given to tasks"},
      {"automountServiceAccountToken", "no Kubernetes API access is given to tasks"},
      {"schedulerName", "Tessera is the scheduler"},
      {"tolerations", "Tessera nodes have no taints"},
      {"priorityClassName", "the job's priority comes from the job, not its pods"},
      {"dnsPolicy", "tasks use the node's resolver"},
      {"hostNetwork", "tasks always use the node's network"},
      {"hostIPC", "tasks are host processes"},
      {"hostPID", "tasks are host processes"},
      {"securityContext", "tasks run as the agent's task user"},
      {"enableServiceLinks", "no Kubernetes services"},
      {"subdomain", "no per-task DNS names; use MASTER_ADDR"},
      {"hostname", "tasks run under the node's host name"},
      {"shareProcessNamespace", "one container per task"},
      {"runtimeClassName", "no container runtime"},
  };
  return kFields;
}

const std::map<std::string, std::string>& IgnoredContainerFields() {
  static const std::map<std::string, std::string> kFields = {
      {"name", "one process group per task; the container's name is not needed"},
      {"image", "container images cannot run as host processes; the command runs on the node"},
      {"imagePullPolicy", "no images are pulled"},
      {"volumeMounts", "host processes see the node's file system; no volumes are mounted"},
      {"volumeDevices", "host processes see the node's devices"},
      {"ports", "tasks use the node's network; the rendezvous port is MASTER_PORT"},
      {"securityContext", "tasks run as the agent's task user"},
      {"livenessProbe", "the agent watches the process itself"},
      {"readinessProbe", "the agent watches the process itself"},
      {"startupProbe", "the agent watches the process itself"},
      {"terminationMessagePath", "the exit code and the log are kept instead"},
      {"terminationMessagePolicy", "the exit code and the log are kept instead"},
      {"stdin", "tasks have no standard input"},
      {"stdinOnce", "tasks have no standard input"},
      {"tty", "tasks have no terminal"},
      {"resizePolicy", "resources are fixed for a run"},
  };
  return kFields;
}

// Kubernetes resource names of GPUs.
bool IsGpuResource(const std::string& name) {
  return name == "nvidia.com/gpu" || name == "amd.com/gpu";
}

}  // namespace

void ReadResources(const Json& c, const std::string& path, const std::string& key, PodTask& task,
                   Translation& t) {
  const Json* res = t.Object(c, path, key);
  if (res == nullptr) return;
  const std::string rp = path + "." + key;
  t.Keys(*res, rp, {"limits", "requests"}, {{"claims", "dynamic resource claims are not used"}});
  const Json* limits = t.Object(*res, rp, "limits");
  const Json* requests = t.Object(*res, rp, "requests");
  auto read = [&](const Json* list, const std::string& lp, bool is_limits) {
    if (list == nullptr) return;
    for (const auto& [name, value] : list->items()) {
      const std::string f = lp + "." + name;
      if (IsGpuResource(name)) {
        if (!value.is_number_integer() && !value.is_string()) {
          t.Refuse(f, "must be a whole number of GPUs, got " + TypeName(value));
          continue;
        }
        Json gpus = value;
        if (value.is_string()) {
          try {
            std::size_t used = 0;
            const int n = std::stoi(value.get<std::string>(), &used);
            if (used != value.get<std::string>().size()) throw std::invalid_argument("");
            gpus = n;
          } catch (const std::exception&) {
            t.Refuse(f, "must be a whole number of GPUs, got " + Quote(value.get<std::string>()));
            continue;
          }
        }
        if (!task.gpus.is_null() && task.gpus != gpus) {
          t.Refuse(f, "GPU requests and limits differ (" + DumpJson(task.gpus) + " and " +
                          DumpJson(gpus) + "); Kubernetes requires them equal");
          continue;
        }
        task.gpus = gpus;
        t.Map(f, "-> GPUs per task = " + DumpJson(gpus));
      } else if (name == "cpu" || name == "memory") {
        Json& slot = name == "cpu" ? task.cpu : task.memory;
        // Requests are what a pod is scheduled by; limits only when no request is given.
        if (!is_limits || slot.is_null()) {
          slot = value;
          t.Map(f, "-> spec." + name + " = " +
                       (value.is_string() ? value.get<std::string>() : DumpJson(value)));
        } else {
          t.Ignore(f, "the request is what Tessera reserves; limits are not enforced");
        }
      } else {
        t.Ignore(f, "resource " + Quote(name) + " is not scheduled by Tessera");
      }
    }
  };
  read(requests, rp + ".requests", false);
  read(limits, rp + ".limits", true);
}

void ReadEnv(const Json& c, const std::string& path, PodTask& task, Translation& t) {
  const Json* env = t.List(c, path, "env");
  if (env == nullptr) return;
  for (std::size_t i = 0; i < env->size(); ++i) {
    const std::string f = path + ".env[" + std::to_string(i) + "]";
    const Json& e = (*env)[i];
    if (!e.is_object()) {
      t.Refuse(f, "must be a mapping {name, value}, got " + TypeName(e));
      continue;
    }
    if (Present(e, "valueFrom") != nullptr) {
      t.Refuse(f + ".valueFrom",
               "values from secrets, config maps or pod fields are not available to host "
               "processes; give the value");
      continue;
    }
    t.Keys(e, f, {"name", "value"});
    auto name = t.String(e, f, "name");
    if (!name) {
      t.Refuse(f + ".name", "required");
      continue;
    }
    const Json* value = Present(e, "value");
    task.env[*name] = value == nullptr     ? ""
                      : value->is_string() ? value->get<std::string>()
                                           : DumpJson(*value);
  }
  if (!env->empty()) t.Map(path + ".env", "-> spec.env");
}

void Translation::Keys(const Json& obj, const std::string& path,
                       const std::set<std::string>& handled,
                       const std::map<std::string, std::string>& ignored) {
  for (const auto& [key, value] : obj.items()) {
    if (handled.contains(key)) continue;
    if (auto it = ignored.find(key); it != ignored.end()) {
      Ignore(Join(path, key), it->second);
      continue;
    }
    Refuse(Join(path, FirstInvalidUtf8(key) ? Quote(key) : key),
           "not supported by the " + source_ +
               " importer (docs/imported-specs.md lists the "
               "fields it reads)");
  }
}

const Json* Translation::Object(const Json& obj, const std::string& path, const std::string& key) {
  const Json* v = Present(obj, key);
  if (v != nullptr && !v->is_object()) {
    Refuse(Join(path, key), "must be a mapping, got " + TypeName(*v));
    return nullptr;
  }
  return v;
}

const Json* Translation::List(const Json& obj, const std::string& path, const std::string& key) {
  const Json* v = Present(obj, key);
  if (v != nullptr && !v->is_array()) {
    Refuse(Join(path, key), "must be a list, got " + TypeName(*v));
    return nullptr;
  }
  return v;
}

std::optional<std::int64_t> Translation::Int(const Json& obj, const std::string& path,
                                             const std::string& key, std::int64_t lo,
                                             std::int64_t hi) {
  const Json* v = Present(obj, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number_integer() || v->get<std::int64_t>() < lo || v->get<std::int64_t>() > hi) {
    Refuse(Join(path, key), "must be a whole number between " + std::to_string(lo) + " and " +
                                std::to_string(hi) + ", got " + DumpJson(*v));
    return std::nullopt;
  }
  return v->get<std::int64_t>();
}

std::optional<std::string> Translation::String(const Json& obj, const std::string& path,
                                               const std::string& key) {
  const Json* v = Present(obj, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) {
    Refuse(Join(path, key), "must be a string, got " + TypeName(*v));
    return std::nullopt;
  }
  return v->get<std::string>();
}

std::optional<bool> Translation::Bool(const Json& obj, const std::string& path,
                                      const std::string& key) {
  const Json* v = Present(obj, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) {
    Refuse(Join(path, key), "must be true or false, got " + TypeName(*v));
    return std::nullopt;
  }
  return v->get<bool>();
}

Result<ImportedJob> Translation::Finish(Json document, bool hold) {
  auto fail = [&]() -> Result<ImportedJob> {
    std::string msg;
    for (const auto& e : errors_) msg += (msg.empty() ? "" : "; ") + e.ToString();
    return InvalidArgument(msg);
  };
  if (!errors_.empty()) return fail();
  std::vector<FieldError> problems;
  auto spec = JobSpecFromJson(document, &problems);
  if (!spec) {
    for (const auto& p : problems) errors_.push_back({"translated " + p.field, p.reason});
    return fail();
  }
  ImportedJob out;
  out.source = source_;
  out.document = std::move(document);
  out.spec = std::move(*spec);
  out.hold = hold;
  out.notes = std::move(notes_);
  return out;
}

Json TranslateMetadata(const Json& doc, bool namespace_is_queue, Translation& t) {
  Json meta = Json::object();
  const Json* m = t.Object(doc, "", "metadata");
  if (m == nullptr) {
    t.Refuse("metadata", "required (metadata.name names the job)");
    return meta;
  }
  t.Keys(*m, "metadata", {"name", "namespace", "generateName"},
         {{"labels", "Tessera has no labels; the job is found by queue and name"},
          {"annotations", "Tessera has no annotations"},
          {"uid", "Tessera gives the job its own id"},
          {"resourceVersion", "Tessera keeps its own versions"},
          {"creationTimestamp", "Tessera records its own submit time"},
          {"generation", "Tessera keeps its own versions"},
          {"managedFields", "Kubernetes bookkeeping"},
          {"finalizers", "Kubernetes bookkeeping"},
          {"ownerReferences", "Kubernetes bookkeeping"}});
  if (Present(*m, "generateName") != nullptr) {
    t.Refuse("metadata.generateName", "give metadata.name: Tessera does not make up job names");
  }
  if (auto name = t.String(*m, "metadata", "name")) {
    if (!ValidJobName(*name)) {
      t.Refuse("metadata.name",
               "Tessera job names are at most 63 lower-case letters, digits "
               "and '-' (no '.'), got " +
                   Quote(*name));
    } else {
      meta["name"] = *name;
      t.Map("metadata.name", "-> metadata.name");
    }
  } else if (Present(*m, "generateName") == nullptr) {
    t.Refuse("metadata.name", "required");
  }
  if (auto ns = t.String(*m, "metadata", "namespace")) {
    if (!namespace_is_queue) {
      t.Ignore("metadata.namespace", "the queue comes from spec.queue");
    } else if (!ValidQueuePath(*ns)) {
      t.Refuse("metadata.namespace",
               "becomes the queue, which must be lower-case letters, "
               "digits and '-', got " +
                   Quote(*ns));
    } else {
      meta["queue"] = *ns;
      t.Map("metadata.namespace", "-> metadata.queue");
    }
  }
  return meta;
}

std::optional<PodTask> TranslatePodTemplate(const Json& tmpl, const std::string& path,
                                            Translation& t) {
  if (!tmpl.is_object()) {
    t.Refuse(path, "must be a pod template (metadata, spec), got " + TypeName(tmpl));
    return std::nullopt;
  }
  t.Keys(tmpl, path, {"spec"},
         {{"metadata", "pod labels and annotations have no meaning for host processes"}});
  const std::string sp = path + ".spec";
  const Json* spec = t.Object(tmpl, path, "spec");
  if (spec == nullptr) {
    t.Refuse(sp, "required (the pod's containers)");
    return std::nullopt;
  }
  t.Keys(*spec, sp, {"containers", "restartPolicy", "terminationGracePeriodSeconds"},
         IgnoredPodFields());
  for (const char* key : {"initContainers", "nodeSelector", "affinity", "nodeName",
                          "topologySpreadConstraints", "ephemeralContainers"}) {
    if (Present(*spec, key) == nullptr) continue;
    const std::string k = key;
    t.Refuse(sp + "." + k,
             k == "initContainers"
                 ? "init containers are not run; run the step at the start of the command"
                 : "node selection by labels is not supported: Tessera nodes have no labels "
                   "(choose GPU models with spec.gpuModels, placement with spec.topology)");
  }
  PodTask task;
  if (auto p = t.String(*spec, sp, "restartPolicy")) task.restart_policy = *p;
  task.grace_period_seconds =
      t.Int(*spec, sp, "terminationGracePeriodSeconds", 0, kMaxGracePeriodSeconds);
  if (task.grace_period_seconds) {
    t.Map(sp + ".terminationGracePeriodSeconds", "-> spec.gracePeriodSeconds");
  }
  const Json* containers = t.List(*spec, sp, "containers");
  if (containers == nullptr || containers->empty()) {
    t.Refuse(sp + ".containers", "required: one container with the command to run");
    return std::nullopt;
  }
  if (containers->size() > 1) {
    t.Refuse(sp + ".containers", "has " + std::to_string(containers->size()) +
                                     " containers; a Tessera task runs one program (sidecars "
                                     "are not supported)");
    return std::nullopt;
  }
  const std::string cp = sp + ".containers[0]";
  const Json& c = (*containers)[0];
  if (!c.is_object()) {
    t.Refuse(cp, "must be a mapping, got " + TypeName(c));
    return std::nullopt;
  }
  t.Keys(c, cp, {"command", "args", "env", "resources", "workingDir", "envFrom", "lifecycle"},
         IgnoredContainerFields());
  if (Present(c, "envFrom") != nullptr) {
    t.Refuse(cp + ".envFrom",
             "config maps and secrets are not available to host processes; "
             "list the variables in env");
  }
  if (Present(c, "lifecycle") != nullptr) {
    t.Refuse(cp + ".lifecycle",
             "postStart and preStop hooks are not run; a task gets SIGTERM "
             "and spec.gracePeriodSeconds to stop");
  }
  for (const char* key : {"command", "args"}) {
    const Json* list = t.List(c, cp, key);
    if (list == nullptr) continue;
    for (const auto& a : *list) {
      if (!a.is_string()) {
        t.Refuse(cp + "." + key, "every argument must be a string");
        break;
      }
      task.command.push_back(a.get<std::string>());
    }
  }
  if (Present(c, "command") == nullptr) {
    t.Refuse(cp + ".command",
             "required: host processes have no image entrypoint, so the program to run must "
             "be given (command, then args)");
  } else {
    t.Map(cp + ".command",
          Present(c, "args") != nullptr ? "+ args -> spec.command" : "-> spec.command");
  }
  if (auto w = t.String(c, cp, "workingDir")) {
    task.working_dir = *w;
    t.Map(cp + ".workingDir", "-> spec.workingDir (a directory on the node)");
  }
  ReadEnv(c, cp, task, t);
  ReadResources(c, cp, "resources", task, t);
  return task;
}

void PutPodTask(const PodTask& task, const std::string& gpus_key, const ImportOptions& options,
                Json& spec) {
  spec["command"] = task.command;
  if (!task.env.empty()) spec["env"] = task.env;
  spec[gpus_key] = task.gpus.is_null() ? Json(0) : task.gpus;
  if (!task.cpu.is_null()) spec["cpu"] = task.cpu;
  if (!task.memory.is_null()) spec["memory"] = task.memory;
  if (!task.working_dir.empty()) {
    spec["workingDir"] = task.working_dir;
  } else if (!options.submit_dir.empty()) {
    spec["workingDir"] = options.submit_dir;
  }
  if (task.grace_period_seconds) spec["gracePeriodSeconds"] = *task.grace_period_seconds;
}

std::optional<int> PriorityOfClass(const std::string& name, const std::string& field,
                                   const ImportOptions& options, Translation& t) {
  auto it = options.priority_classes.find(name);
  if (it == options.priority_classes.end()) {
    t.Refuse(field, "priority class " + Quote(name) +
                        " is unknown: put its PriorityClass (scheduling.k8s.io/v1) in the same "
                        "file, or give `tessera submit --priority-class " +
                        name + "=VALUE`");
    return std::nullopt;
  }
  t.Map(field, "-> spec.priority = " + std::to_string(it->second) + " (priority class " +
                   Quote(name) + ")");
  return it->second;
}

std::string ApiVersionOf(const Json& doc) {
  return doc.is_object() && doc.contains("apiVersion") && doc["apiVersion"].is_string()
             ? doc["apiVersion"].get<std::string>()
             : "";
}

std::string KindOf(const Json& doc) {
  return doc.is_object() && doc.contains("kind") && doc["kind"].is_string()
             ? doc["kind"].get<std::string>()
             : "";
}

}  // namespace import
}  // namespace tessera
