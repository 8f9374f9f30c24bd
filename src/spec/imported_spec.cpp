// Which importer reads a document: by apiVersion and kind.
#include "spec/imported_spec.h"

#include "spec/import_translation.h"
#include "spec/text.h"

namespace tessera {

namespace {

using import::ApiVersionOf;
using import::KindOf;
using Json = nlohmann::json;

using Importer = Result<ImportedJob> (*)(const Json&, const ImportOptions&);

Importer ImporterFor(const Json& doc) {
  const std::string api = ApiVersionOf(doc), kind = KindOf(doc);
  if (api == "kubeflow.org/v1" && kind == "PyTorchJob") return &ImportPyTorchJob;
  if (api == "trainer.kubeflow.org/v1alpha1" && kind == "TrainJob") return &ImportTrainJob;
  if (api == "batch.volcano.sh/v1alpha1" && kind == "Job") return &ImportVolcanoJob;
  if (api == "batch/v1" && kind == "Job") return &ImportKubernetesJob;
  return nullptr;
}

}  // namespace

bool IsImportedJobDocument(const Json& doc) { return ImporterFor(doc) != nullptr; }

Result<ImportedJob> ImportJobDocument(const Json& doc, const ImportOptions& options) {
  Importer importer = ImporterFor(doc);
  if (importer == nullptr) {
    return InvalidArgument("kind: " + Quote(KindOf(doc)) + " of apiVersion " +
                           Quote(ApiVersionOf(doc)) +
                           " is not a format Tessera imports (PyTorchJob kubeflow.org/v1, "
                           "TrainJob trainer.kubeflow.org/v1alpha1, Job batch.volcano.sh/v1alpha1, "
                           "Job batch/v1)");
  }
  return importer(doc, options);
}

Result<bool> ReadPriorityClass(const Json& doc, ImportOptions& options) {
  if (KindOf(doc) != "PriorityClass" || !ApiVersionOf(doc).starts_with("scheduling.k8s.io/")) {
    return false;
  }
  const Json* meta = doc.contains("metadata") ? &doc["metadata"] : nullptr;
  if (meta == nullptr || !meta->is_object() || !meta->contains("name") ||
      !(*meta)["name"].is_string()) {
    return InvalidArgument("metadata.name: required (the PriorityClass's name)");
  }
  if (!doc.contains("value") || !doc["value"].is_number_integer()) {
    return InvalidArgument("value: required, a whole number");
  }
  const auto value = doc["value"].get<std::int64_t>();
  if (value < -kMaxPriority || value > kMaxPriority) {
    return InvalidArgument("value: Tessera priorities are between " +
                           std::to_string(-kMaxPriority) + " and " + std::to_string(kMaxPriority) +
                           ", got " + std::to_string(value));
  }
  options.priority_classes[(*meta)["name"].get<std::string>()] = static_cast<int>(value);
  return true;
}

}  // namespace tessera
