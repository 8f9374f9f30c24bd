// The imported job forms `tessera submit` translates (Kubeflow PyTorchJob and TrainJob,
// Volcano Job, Kubernetes Job, PriorityClass, Slurm batch scripts). The first byte picks the
// reader: even, the document readers (YAML or JSON); odd, the sbatch script reader.
// Properties: never crashes or throws; every translated document is a Tessera spec that
// ParseJobSpec accepts as the very spec the importer validated.
// fuzz-links: tessera_spec
#include <cstdint>
#include <string>

#include "fuzz/fuzz_support.h"
#include "spec/document.h"
#include "spec/imported_spec.h"
#include "spec/job_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text = tessera::fuzz::Text(data + 1, size - 1);
  tessera::ImportOptions options;
  options.submit_dir = "/fuzz";
  options.script_name = "job.sbatch";
  tessera::Result<tessera::ImportedJob> job = tessera::InvalidArgument("not imported");
  if (data[0] % 2 == 1) {
    job = tessera::ImportSbatchScript(text, options);
  } else {
    auto doc = tessera::ParseDocument(text);
    if (!doc) return 0;
    if (auto priority = tessera::ReadPriorityClass(*doc, options); !priority || *priority) return 0;
    if (!tessera::IsImportedJobDocument(*doc)) return 0;
    job = tessera::ImportJobDocument(*doc, options);
  }
  if (!job) {
    FUZZ_CHECK(!job.error().message.empty(), "a refusal without a reason");
    return 0;
  }
  // The translation is submitted as its document; it must be the spec the importer validated.
  const std::string submitted = tessera::DumpJson(job->document);
  auto spec = tessera::ParseJobSpec(submitted);
  FUZZ_CHECK(spec.has_value(),
             "the translated spec is refused: " + spec.error().message + "\n" + submitted);
  FUZZ_CHECK(tessera::JobSpecToJson(*spec) == tessera::JobSpecToJson(job->spec),
             "the translated document is not the validated spec: " + submitted);
  return 0;
}
