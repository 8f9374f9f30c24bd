// Kubeflow Trainer TrainJob (trainer.kubeflow.org/v1alpha1) -> TrainingJob, where it maps
// cleanly: the trainer's command, numNodes and resourcesPerNode, with a torch runtime (the
// runtime's own template is a cluster object Tessera does not have, so the command must be
// given). MPI and DeepSpeed runtimes start ranks over ssh and are refused.
#include "spec/import_translation.h"
#include "spec/text.h"

namespace tessera {

using namespace import;

Result<ImportedJob> ImportTrainJob(const Json& doc, const ImportOptions& options) {
  Translation t("Kubeflow Trainer TrainJob (trainer.kubeflow.org/v1alpha1)");
  t.Keys(doc, "", {"apiVersion", "kind", "metadata", "spec"},
         {{"status", "status is Tessera's to keep"}});
  Json meta = TranslateMetadata(doc, /*namespace_is_queue=*/true, t);
  const Json* spec = t.Object(doc, "", "spec");
  if (spec == nullptr) {
    t.Refuse("spec", "required");
    return t.Finish({}, false);
  }
  const std::string P = "spec";
  t.Keys(*spec, P,
         {"runtimeRef", "trainer", "suspend", "activeDeadlineSeconds", "initializer",
          "podSpecOverrides", "runtimePatches", "datasetConfig", "modelConfig"},
         {{"labels", "Tessera has no labels"},
          {"annotations", "Tessera has no annotations"},
          {"managedBy", "Tessera manages the job"}});
  for (const char* key :
       {"initializer", "datasetConfig", "modelConfig", "podSpecOverrides", "runtimePatches"}) {
    if (!spec->contains(key)) continue;
    const std::string k = key;
    t.Refuse(P + "." + k, k == "podSpecOverrides" || k == "runtimePatches"
                              ? "the runtime's pod template is not Tessera's to patch"
                              : "dataset and model initializers are not run; fetch them at the "
                                "start of the trainer's command");
  }
  Json s = Json::object();
  if (const Json* ref = t.Object(*spec, P, "runtimeRef")) {
    t.Keys(*ref, P + ".runtimeRef", {"name"},
           {{"apiGroup", "runtimes are not Kubernetes objects in Tessera"},
            {"kind", "runtimes are not Kubernetes objects in Tessera"}});
    const std::string name = t.String(*ref, P + ".runtimeRef", "name").value_or("");
    if (name.find("mpi") != std::string::npos || name.find("deepspeed") != std::string::npos) {
      t.Refuse("spec.runtimeRef.name", "runtime " + Quote(name) +
                                           " starts ranks with mpirun over ssh, which Tessera "
                                           "does not set up");
    } else if (!name.empty()) {
      t.Map("spec.runtimeRef.name",
            Quote(name) +
                ": torch rendezvous from MASTER_ADDR/MASTER_PORT and PET_*; the "
                "runtime's own pod template is not read");
    }
  } else {
    t.Refuse("spec.runtimeRef", "required");
  }
  PodTask task;
  const Json* trainer = t.Object(*spec, P, "trainer");
  const std::string TP = P + ".trainer";
  if (trainer == nullptr) {
    t.Refuse(TP,
             "required: the runtime's default command is not known to Tessera; give "
             "trainer.command");
  } else {
    t.Keys(*trainer, TP,
           {"command", "args", "env", "numNodes", "resourcesPerNode", "numProcPerNode"},
           {{"image",
             "container images cannot run as host processes; the command runs on "
             "the node"}});
    for (const char* key : {"command", "args"}) {
      if (const Json* list = t.List(*trainer, TP, key)) {
        for (const auto& a : *list) {
          if (a.is_string()) task.command.push_back(a.get<std::string>());
        }
      }
    }
    if (!trainer->contains("command")) {
      t.Refuse(TP + ".command", "required: the runtime's default command is not known here");
    } else {
      t.Map(TP + ".command", "+ args -> spec.command");
    }
    ReadEnv(*trainer, TP, task, t);
    ReadResources(*trainer, TP, "resourcesPerNode", task, t);
    const auto nodes = t.Int(*trainer, TP, "numNodes", 1, kMaxTasksPerJob).value_or(1);
    s["workers"] = nodes;
    t.Map(TP + ".numNodes", "-> TrainingJob, spec.workers = " + std::to_string(nodes));
    if (auto n = t.Int(*trainer, TP, "numProcPerNode", 1, kMaxProcessesPerWorker)) {
      task.env["PET_NPROC_PER_NODE"] = std::to_string(*n);
      t.Map(TP + ".numProcPerNode", "-> env PET_NPROC_PER_NODE (torchrun starts the processes)");
    }
  }
  if (auto v = t.Int(*spec, P, "activeDeadlineSeconds", 1, kMaxTimeLimitSeconds)) {
    s["timeLimitSeconds"] = *v;
    t.Map("spec.activeDeadlineSeconds", "-> spec.timeLimitSeconds (counted from each start)");
  }
  const bool hold = t.Bool(*spec, P, "suspend").value_or(false);
  if (hold) t.Map("spec.suspend", "-> submitted held (`tessera release` starts it)");
  if (!t.ok()) return t.Finish({}, false);
  PutPodTask(task, "gpusPerWorker", options, s);
  return t.Finish(
      {{"apiVersion", "tessera/v1"}, {"kind", "TrainingJob"}, {"metadata", meta}, {"spec", s}},
      hold);
}

}  // namespace tessera
