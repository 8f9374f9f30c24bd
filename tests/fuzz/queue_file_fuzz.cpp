// Queue tree files (`tesserad --queues`, `tessera sim --queues`): YAML through ParseQueueFile.
// Property: never crashes or throws; a refusal has a reason that names the file.
// fuzz-links: tessera_spec
#include <cstdint>
#include <string>

#include "fuzz/fuzz_support.h"
#include "spec/queue_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto tree = tessera::ParseQueueFile(std::string(tessera::fuzz::Text(data, size)), "queues.yaml");
  if (!tree) {
    FUZZ_CHECK(tree.error().message.find("queues.yaml") != std::string::npos,
               "the error does not name the file: " + tree.error().message);
  }
  return 0;
}
