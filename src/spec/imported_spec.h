// The specs users already have, translated to Tessera's kinds: Kubeflow PyTorchJob
// (kubeflow.org/v1), Kubeflow Trainer TrainJob (trainer.kubeflow.org/v1alpha1), Volcano Job
// (batch.volcano.sh/v1alpha1), Kubernetes Job (batch/v1) and Slurm batch scripts. Pure: text or
// a parsed document in, a validated Tessera spec plus a note per field out. A field that cannot
// be honoured is refused with its path and the reason; fields host processes have no use for
// (container images, volumes) are ignored with a note. docs/imported-specs.md has the tables.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "spec/job_spec.h"

namespace tessera {

// What became of one field of the source: mapped to a Tessera field, or ignored (and why).
struct ImportNote {
  std::string field;   // path in the source: "spec.pytorchReplicaSpecs.Worker.replicas", "--time"
  std::string action;  // "-> spec.workers = 4 (Master 1 + Worker 3)", or why it was ignored
  bool ignored = false;
  std::string ToString() const;
};

struct ImportOptions {
  // PriorityClass name -> value: from PriorityClass documents of the same file and from
  // `tessera submit --priority-class NAME=VALUE`.
  std::map<std::string, int> priority_classes;
  // Absolute directory `tessera submit` runs in: the default spec.workingDir (as sbatch runs a
  // job where it was submitted) and SLURM_SUBMIT_DIR. Empty: no default.
  std::string submit_dir;
  std::string script_name;  // sbatch: the script's file name (the default job name)
  // sbatch: the submitting environment, for --export=NAME (Slurm copies NAME's value).
  std::map<std::string, std::string> submit_env;
};

struct ImportedJob {
  std::string source;       // "Kubeflow PyTorchJob (kubeflow.org/v1)", "Slurm batch script"
  nlohmann::json document;  // the Tessera spec (apiVersion tessera/v1), as it is submitted
  JobSpec spec;             // the same, parsed and validated
  bool hold = false;        // suspend: true / sbatch --hold: submit held
  std::vector<ImportNote> notes;
};

// True when `doc` has the apiVersion and kind of a format an importer reads.
bool IsImportedJobDocument(const nlohmann::json& doc);
// Translates one such document. The error lists every refused field as "FIELD: reason",
// joined by "; "; nothing is translated half.
Result<ImportedJob> ImportJobDocument(const nlohmann::json& doc, const ImportOptions& options);

// A PriorityClass document (scheduling.k8s.io/v1): records its value in `options` and returns
// true; false for any other document.
Result<bool> ReadPriorityClass(const nlohmann::json& doc, ImportOptions& options);

// A Slurm batch script (`tessera submit --sbatch FILE`): its #SBATCH lines become the spec, its
// body is run once, on the first node of the allocation, with Slurm's environment variables.
Result<ImportedJob> ImportSbatchScript(std::string_view text, const ImportOptions& options);

// Each importer, for tests and the dispatcher.
Result<ImportedJob> ImportPyTorchJob(const nlohmann::json& doc, const ImportOptions& options);
Result<ImportedJob> ImportTrainJob(const nlohmann::json& doc, const ImportOptions& options);
Result<ImportedJob> ImportVolcanoJob(const nlohmann::json& doc, const ImportOptions& options);
Result<ImportedJob> ImportKubernetesJob(const nlohmann::json& doc, const ImportOptions& options);

}  // namespace tessera
