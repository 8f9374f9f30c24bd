// The co-location config in YAML (docs/colocation.md):
//   colocation:
//     oversell: 0.5                 # share of online replicas' unused GPU offline may use, 0..1
//     online: [InferenceService]    # kinds never evicted for offline work
//     offline: [BatchJob]           # kinds that soak idle capacity and are evicted first
//     evictionCostSeconds: 30       # run time an evicted offline task pays on top of lost work
// Every error names the file, line, key and reason; nothing is half-applied.
#pragma once

#include <string>
#include <string_view>

#include "core/colocation_config.h"
#include "core/status.h"

namespace tessera {

Result<ColocationConfig> ParseColocationConfigYaml(std::string_view text, std::string_view source);
Result<ColocationConfig> LoadColocationConfig(const std::string& path);

}  // namespace tessera
