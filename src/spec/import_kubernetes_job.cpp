// Kubernetes Job (batch/v1) -> BatchJob: `completions` tasks, at most `parallelism` at once;
// each task gets JOB_COMPLETION_INDEX (= TASK_INDEX) as an Indexed Job's pods do.
#include "spec/import_translation.h"

namespace tessera {

using namespace import;

Result<ImportedJob> ImportKubernetesJob(const Json& doc, const ImportOptions& options) {
  Translation t("Kubernetes Job (batch/v1)");
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
         {"template", "completions", "parallelism", "completionMode", "backoffLimit",
          "backoffLimitPerIndex", "activeDeadlineSeconds", "suspend", "podFailurePolicy",
          "successPolicy", "maxFailedIndexes"},
         {{"ttlSecondsAfterFinished", "finished jobs stay until `tessera purge`"},
          {"selector", "Tessera tracks the job's own tasks"},
          {"manualSelector", "Tessera tracks the job's own tasks"},
          {"podReplacementPolicy", "a failed task is replaced once it has stopped"},
          {"managedBy", "Tessera manages the job"}});
  for (const char* key : {"podFailurePolicy", "successPolicy", "maxFailedIndexes"}) {
    if (spec->contains(key)) {
      t.Refuse(P + "." + key,
               "not supported: a BatchJob succeeds when every task exits 0 and "
               "fails when a task has no restarts left");
    }
  }
  Json s = Json::object();
  auto completions = t.Int(*spec, P, "completions", 1, kMaxTasksPerJob);
  auto parallelism = t.Int(*spec, P, "parallelism", 0, kMaxTasksPerJob);
  if (!completions && parallelism.value_or(1) > 1) {
    t.Refuse("spec.completions",
             "required with parallelism > 1: the work-queue pattern (done when any pod "
             "succeeds) is not supported; a BatchJob runs a fixed number of tasks");
  }
  const int tasks = static_cast<int>(completions.value_or(1));
  s["tasks"] = tasks;
  t.Map("spec.completions", "-> BatchJob, spec.tasks = " + std::to_string(tasks));
  if (parallelism) {
    if (*parallelism == 0) {
      t.Refuse("spec.parallelism", "0 would never start a task; use --hold to submit it held");
    } else if (*parallelism < tasks) {
      s["parallelism"] = *parallelism;
      t.Map("spec.parallelism", "-> spec.parallelism (at most this many tasks run at once)");
    } else {
      t.Map("spec.parallelism", "not below completions: every task may run at once");
    }
  }
  if (auto mode = t.String(*spec, P, "completionMode")) {
    if (*mode != "Indexed" && *mode != "NonIndexed") {
      t.Refuse("spec.completionMode", "must be Indexed or NonIndexed, got " + *mode);
    } else {
      t.Map("spec.completionMode", *mode + ": each task gets JOB_COMPLETION_INDEX = TASK_INDEX");
    }
  }
  auto limit = t.Int(*spec, P, "backoffLimit", 0, kMaxRestartsLimit);
  auto per_index = t.Int(*spec, P, "backoffLimitPerIndex", 0, kMaxRestartsLimit);
  if (per_index) {
    s["maxRestarts"] = *per_index;
    t.Map("spec.backoffLimitPerIndex", "-> spec.maxRestarts (restarts of each task)");
  } else if (limit) {
    s["maxRestarts"] = *limit;
    t.Map("spec.backoffLimit",
          "-> spec.maxRestarts (Tessera counts restarts per task, not for the whole job)");
  }
  if (auto v = t.Int(*spec, P, "activeDeadlineSeconds", 1, kMaxTimeLimitSeconds)) {
    s["timeLimitSeconds"] = *v;
    t.Map("spec.activeDeadlineSeconds",
          "-> spec.timeLimitSeconds (Tessera counts each task's run, not from the submission)");
  }
  const bool hold = t.Bool(*spec, P, "suspend").value_or(false);
  if (hold) t.Map("spec.suspend", "-> submitted held (`tessera release` starts it)");
  std::optional<PodTask> task;
  if (!spec->contains("template")) {
    t.Refuse("spec.template", "required");
  } else {
    task = TranslatePodTemplate((*spec)["template"], "spec.template", t);
  }
  if (!task || !t.ok()) return t.Finish({}, false);
  if (task->restart_policy == "Never" && !limit && !per_index) {
    t.Map("spec.template.spec.restartPolicy",
          "Never: a failed task is retried up to spec.maxRestarts (Kubernetes' backoffLimit "
          "default of 6 is not copied; Tessera's default is 3)");
  }
  // Indexed Jobs' pods read their index from JOB_COMPLETION_INDEX.
  std::vector<std::string> argv = {
      "/bin/sh", "-c", "export JOB_COMPLETION_INDEX=\"$TASK_INDEX\"; exec \"$@\"", "job"};
  argv.insert(argv.end(), task->command.begin(), task->command.end());
  task->command = std::move(argv);
  PutPodTask(*task, "gpusPerTask", options, s);
  return t.Finish(
      {{"apiVersion", "tessera/v1"}, {"kind", "BatchJob"}, {"metadata", meta}, {"spec", s}}, hold);
}

}  // namespace tessera
