// Job specs as `tessera submit` and POST /v1/jobs take them: YAML or JSON text through
// ParseJobSpec. Properties: it never crashes or throws; an accepted spec's canonical JSON
// (JobSpecToJson) parses back to the same canonical JSON (job_spec.h promises it), and so does
// its YAML rendering (`-o yaml`).
// fuzz-links: tessera_spec
#include <cstdint>
#include <string>

#include "fuzz/fuzz_support.h"
#include "spec/document.h"
#include "spec/job_spec.h"

using tessera::DumpJson;
using tessera::JobSpecToJson;
using tessera::ParseJobSpec;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<tessera::FieldError> fields;
  auto spec = ParseJobSpec(tessera::fuzz::Text(data, size), &fields);
  if (!spec) {
    FUZZ_CHECK(!spec.error().message.empty(), "a refusal without a reason");
    return 0;
  }
  const nlohmann::json canonical = JobSpecToJson(*spec);
  for (const std::string& text : {DumpJson(canonical), tessera::ToYaml(canonical)}) {
    auto again = ParseJobSpec(text);
    FUZZ_CHECK(again.has_value(),
               "the canonical form is refused: " + again.error().message + "\n" + text);
    FUZZ_CHECK(JobSpecToJson(*again) == canonical, "the canonical form reads back differently:\n" +
                                                       text + "\nbecame\n" +
                                                       DumpJson(JobSpecToJson(*again), 2));
  }
  return 0;
}
