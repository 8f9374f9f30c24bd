// Cluster files (`tessera sim --cluster FILE`): the YAML form through ParseClusterYaml, and the
// CSV node lists (openb, Muri) through LoadCluster when the first line is one of their
// headers. Properties: never crashes or throws; an accepted cluster has at most
// kMaxClusterNodes nodes, each with a name.
#include <cstdint>
#include <string>

#include "fuzz/fuzz_support.h"
#include "sim/cluster_formats.h"
#include "sim/cluster_spec.h"

namespace {

void CheckCluster(const tessera::Result<tessera::Cluster>& cluster) {
  if (!cluster) {
    FUZZ_CHECK(!cluster.error().message.empty(), "a refusal without a reason");
    return;
  }
  FUZZ_CHECK(static_cast<std::int64_t>(cluster->nodes().size()) <= tessera::kMaxClusterNodes,
             "too many nodes");
  for (const auto& node : cluster->nodes()) FUZZ_CHECK(!node.name.empty(), "a node without a name");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = tessera::fuzz::Text(data, size);
  const std::string_view first_line = text.substr(0, text.find('\n'));
  if (tessera::IsClusterCsvHeader(first_line)) {
    CheckCluster(tessera::LoadCluster(tessera::fuzz::ScratchFile(text, ".csv")));
  } else {
    CheckCluster(tessera::ParseClusterYaml(text, "cluster.yaml"));
  }
  return 0;
}
