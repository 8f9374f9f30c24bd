// Kubeflow PyTorchJob (kubeflow.org/v1) -> TrainingJob. Master and Worker replicas form one
// gang (the Master is rank 0); Kubeflow's MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK and
// torchrun's PET_* variables are set by Tessera with the same meaning.
#include "spec/import_translation.h"
#include "spec/text.h"

namespace tessera {

namespace {

using namespace import;

struct Replica {
  int count = 0;
  PodTask task;
  std::string path;
};

std::optional<Replica> ReadReplica(const Json& specs, const std::string& type, Translation& t) {
  const std::string path = "spec.pytorchReplicaSpecs." + type;
  const Json* r = t.Object(specs, "spec.pytorchReplicaSpecs", type);
  if (r == nullptr) return std::nullopt;
  t.Keys(*r, path, {"replicas", "template", "restartPolicy"});
  Replica out;
  out.path = path;
  out.count = static_cast<int>(t.Int(*r, path, "replicas", 0, kMaxTasksPerJob).value_or(1));
  if (!r->contains("template")) {
    t.Refuse(path + ".template", "required");
    return std::nullopt;
  }
  auto task = TranslatePodTemplate((*r)["template"], path + ".template", t);
  if (!task) return std::nullopt;
  out.task = std::move(*task);
  if (auto p = t.String(*r, path, "restartPolicy")) out.task.restart_policy = *p;
  return out;
}

// runPolicy: the time limit, restarts, queue, priority and gang size.
void ReadRunPolicy(const Json& spec, int workers, bool elastic, const ImportOptions& options,
                   Translation& t, Json& meta, Json& s) {
  const Json* rp = t.Object(spec, "spec", "runPolicy");
  if (rp == nullptr) return;
  const std::string P = "spec.runPolicy";
  t.Keys(*rp, P, {"activeDeadlineSeconds", "backoffLimit", "schedulingPolicy", "suspend"},
         {{"cleanPodPolicy", "a task's processes always end with the task"},
          {"ttlSecondsAfterFinished", "finished jobs stay until `tessera purge`"},
          {"managedBy", "Tessera manages the job"}});
  if (auto v = t.Int(*rp, P, "activeDeadlineSeconds", 1, kMaxTimeLimitSeconds)) {
    s["timeLimitSeconds"] = *v;
    t.Map(P + ".activeDeadlineSeconds", "-> spec.timeLimitSeconds (counted from each start)");
  }
  if (auto v = t.Int(*rp, P, "backoffLimit", 0, kMaxRestartsLimit)) {
    s["maxRestarts"] = *v;
    t.Map(P + ".backoffLimit", "-> spec.maxRestarts (gang restarts)");
  }
  const Json* sp = t.Object(*rp, P, "schedulingPolicy");
  if (sp == nullptr) return;
  const std::string SP = P + ".schedulingPolicy";
  t.Keys(*sp, SP, {"minAvailable", "queue", "priorityClass"},
         {{"minResources", "the gang's resources are its workers' sum"},
          {"scheduleTimeoutSeconds", "a gang waits until it fits"}});
  if (auto q = t.String(*sp, SP, "queue")) {
    meta["queue"] = *q;
    t.Map(SP + ".queue", "-> metadata.queue");
  }
  if (auto c = t.String(*sp, SP, "priorityClass")) {
    if (auto p = PriorityOfClass(*c, SP + ".priorityClass", options, t)) s["priority"] = *p;
  }
  if (auto m = t.Int(*sp, SP, "minAvailable", 0, kMaxTasksPerJob)) {
    if (!elastic && *m != workers) {
      t.Refuse(SP + ".minAvailable", "a TrainingJob starts all " + std::to_string(workers) +
                                         " workers at once; a smaller gang needs elasticPolicy");
    } else {
      t.Map(SP + ".minAvailable", "gang of all workers (all-or-nothing start)");
    }
  }
}

// elasticPolicy: the elastic range and torchrun's rendezvous settings (as PET_* variables).
bool ReadElasticPolicy(const Json& spec, Translation& t, Json& s, Json& env) {
  const Json* ep = t.Object(spec, "spec", "elasticPolicy");
  if (ep == nullptr) return false;
  const std::string P = "spec.elasticPolicy";
  t.Keys(*ep, P,
         {"minReplicas", "maxReplicas", "rdzvBackend", "rdzvId", "rdzvConf", "nProcPerNode",
          "maxRestarts", "metrics"},
         {{"rdzvHost", "the rendezvous is on rank 0's node (MASTER_ADDR)"},
          {"rdzvPort", "the rendezvous port is MASTER_PORT, chosen by Tessera"},
          {"standalone", "the rendezvous endpoint is always MASTER_ADDR:MASTER_PORT"}});
  if (ep->contains("metrics")) {
    t.Refuse(P + ".metrics",
             "autoscaling a gang on metrics is not supported; Tessera resizes "
             "within [minReplicas, maxReplicas] to use free GPUs");
  }
  auto lo = t.Int(*ep, P, "minReplicas", 1, kMaxTasksPerJob);
  auto hi = t.Int(*ep, P, "maxReplicas", 1, kMaxTasksPerJob);
  if (lo || hi) {
    s["elastic"] = {{"minWorkers", lo.value_or(1)}, {"maxWorkers", hi.value_or(lo.value_or(1))}};
    env["PET_NNODES"] = std::to_string(lo.value_or(1)) + ":" + std::to_string(hi.value_or(1));
    t.Map(P + ".minReplicas/maxReplicas", "-> spec.elastic {minWorkers, maxWorkers}, PET_NNODES");
  }
  if (auto b = t.String(*ep, P, "rdzvBackend")) {
    env["PET_RDZV_BACKEND"] = *b;
    t.Map(P + ".rdzvBackend", "-> env PET_RDZV_BACKEND (PET_RDZV_ENDPOINT = rank 0's node)");
  }
  if (auto id = t.String(*ep, P, "rdzvId")) {
    env["PET_RDZV_ID"] = *id;
    t.Map(P + ".rdzvId", "-> env PET_RDZV_ID");
  }
  if (const Json* conf = t.List(*ep, P, "rdzvConf")) {
    std::string joined;
    for (const auto& kv : *conf) {
      if (!kv.is_object() || !kv.value("key", Json()).is_string()) {
        t.Refuse(P + ".rdzvConf", "must be a list of {key, value}");
        break;
      }
      joined += (joined.empty() ? "" : ",") + kv["key"].get<std::string>() + "=" +
                kv.value("value", std::string());
    }
    env["PET_RDZV_CONF"] = joined;
    t.Map(P + ".rdzvConf", "-> env PET_RDZV_CONF");
  }
  if (auto n = t.Int(*ep, P, "nProcPerNode", 1, kMaxProcessesPerWorker)) {
    env["PET_NPROC_PER_NODE"] = std::to_string(*n);
    t.Map(P + ".nProcPerNode", "-> env PET_NPROC_PER_NODE (torchrun starts the processes)");
  }
  if (auto n = t.Int(*ep, P, "maxRestarts", 0, kMaxRestartsLimit)) {
    env["PET_MAX_RESTARTS"] = std::to_string(*n);
    t.Map(P + ".maxRestarts", "-> env PET_MAX_RESTARTS (torchrun's own restarts)");
  }
  return true;
}

}  // namespace

Result<ImportedJob> ImportPyTorchJob(const Json& doc, const ImportOptions& options) {
  Translation t("Kubeflow PyTorchJob (kubeflow.org/v1)");
  t.Keys(doc, "", {"apiVersion", "kind", "metadata", "spec"},
         {{"status", "status is Tessera's to keep"}});
  Json meta = TranslateMetadata(doc, /*namespace_is_queue=*/true, t);
  const Json* spec = t.Object(doc, "", "spec");
  if (spec == nullptr) {
    t.Refuse("spec", "required");
    return t.Finish({}, false);
  }
  t.Keys(*spec, "spec", {"pytorchReplicaSpecs", "runPolicy", "elasticPolicy", "nprocPerNode"});
  Json s = Json::object();
  Json env = Json::object();
  const bool elastic = ReadElasticPolicy(*spec, t, s, env);
  const Json* specs = t.Object(*spec, "spec", "pytorchReplicaSpecs");
  if (specs == nullptr) {
    t.Refuse("spec.pytorchReplicaSpecs", "required (Master and/or Worker)");
    return t.Finish({}, false);
  }
  t.Keys(*specs, "spec.pytorchReplicaSpecs", {"Master", "Worker"});
  auto master = ReadReplica(*specs, "Master", t);
  auto worker = ReadReplica(*specs, "Worker", t);
  if (!master && !worker) {
    if (t.ok()) t.Refuse("spec.pytorchReplicaSpecs", "needs a Master or a Worker replica spec");
    return t.Finish({}, false);
  }
  if (master && master->count != 1) {
    t.Refuse(master->path + ".replicas",
             "a PyTorchJob has one Master, got " + std::to_string(master->count));
  }
  if (master && worker && !master->task.SameAs(worker->task)) {
    t.Refuse("spec.pytorchReplicaSpecs",
             "Master and Worker differ in command, environment or resources; every worker of a "
             "TrainingJob runs the same program on the same resources (RANK 0 is the Master)");
  }
  if (master && elastic) {
    t.Refuse("spec.elasticPolicy", "an elastic PyTorchJob has Worker replicas only");
  }
  const Replica& first = master ? *master : *worker;
  const int workers = (master ? 1 : 0) + (worker ? worker->count : 0);
  s["workers"] = workers;
  t.Map(
      "spec.pytorchReplicaSpecs",
      "-> TrainingJob, spec.workers = " + std::to_string(workers) +
          (master ? " (Master is rank 0" + std::string(worker ? ", then the Workers)" : ")") : ""));
  if (master && worker && worker->count > 0) {
    s["successPolicy"] = "Rank0";
    t.Map("spec.pytorchReplicaSpecs.Master",
          "-> spec.successPolicy Rank0 (the job ends when the Master does, as in Kubeflow)");
  }
  if (first.task.restart_policy == "Never") {
    s["maxRestarts"] = 0;
    t.Map(first.path + ".restartPolicy", "Never -> spec.maxRestarts = 0");
  } else if (!first.task.restart_policy.empty()) {
    t.Map(first.path + ".restartPolicy", first.task.restart_policy +
                                             ": a failed worker restarts the whole gang, up to "
                                             "spec.maxRestarts");
  }
  if (auto n = t.String(*spec, "spec", "nprocPerNode")) {
    env["PET_NPROC_PER_NODE"] = *n;
    t.Map("spec.nprocPerNode", "-> env PET_NPROC_PER_NODE (torchrun starts the processes)");
  }
  ReadRunPolicy(*spec, workers, elastic, options, t, meta, s);
  if (!t.ok()) return t.Finish({}, false);
  PodTask task = first.task;
  for (const auto& [k, v] : env.items()) task.env[k] = v;
  if (env.contains("PET_RDZV_BACKEND")) {
    // torchrun's c10d rendezvous needs an endpoint; it is rank 0's node, known at launch.
    std::vector<std::string> argv = {
        "/bin/sh", "-c", "export PET_RDZV_ENDPOINT=\"$MASTER_ADDR:$MASTER_PORT\"; exec \"$@\"",
        "pytorchjob"};
    argv.insert(argv.end(), task.command.begin(), task.command.end());
    task.command = std::move(argv);
  }
  PutPodTask(task, "gpusPerWorker", options, s);
  const bool hold = [&] {
    const Json* rp = spec->contains("runPolicy") ? &(*spec)["runPolicy"] : nullptr;
    return rp != nullptr && rp->is_object() && rp->value("suspend", false) == true;
  }();
  if (hold) t.Map("spec.runPolicy.suspend", "-> submitted held (`tessera release` starts it)");
  return t.Finish(
      {{"apiVersion", "tessera/v1"}, {"kind", "TrainingJob"}, {"metadata", meta}, {"spec", s}},
      hold);
}

}  // namespace tessera
