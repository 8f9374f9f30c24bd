// The cluster-spec formats behind LoadCluster, one per file: the short form and dispatch
// (cluster_spec.cpp), the CSV node lists (cluster_csv.cpp) and YAML (cluster_yaml.cpp).
// Internal to src/sim; the public API is cluster_spec.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/cluster.h"
#include "core/status.h"

namespace tessera {

// More nodes than this is a typo (or a unit mix-up), not a cluster.
inline constexpr std::int64_t kMaxClusterNodes = 1'000'000;

// Defaults per GPU of a node whose CPU and memory are not given (short form, YAML pools).
inline constexpr std::int64_t kDefaultCpuMilliPerGpu = 16'000;       // 16 cores
inline constexpr std::int64_t kDefaultMemoryMibPerGpu = 128 * 1024;  // 128 GiB
inline constexpr std::string_view kDefaultGpuModel = "GPU";

// A GPU model or pool name: letters, digits and . _ + -, at most 63 characters.
bool IsValidClusterName(std::string_view name);

// "node-0042" style names: `prefix`-index, zero-padded so that names sort in node order.
std::string NumberedName(std::string_view prefix, std::int64_t index, std::int64_t count);

// The known CSV cluster formats, recognised from the header line.
Result<Cluster> LoadClusterCsv(const std::string& path);
// True when `header_line` is the header of a known CSV cluster format.
bool IsClusterCsvHeader(std::string_view header_line);

Result<Cluster> LoadClusterYaml(const std::string& path);

}  // namespace tessera
