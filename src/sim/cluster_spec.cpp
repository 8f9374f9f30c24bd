#include "sim/cluster_spec.h"

namespace tessera {

Result<Cluster> LoadCluster(const std::string& spec) {
  return NotFound(spec + ": cluster specs are not written yet");
}

}  // namespace tessera
