// Reads the Prometheus text format back (for `tessera top` and the controller's GET /v1/usage,
// which ask each agent's /metrics for its GPUs' utilisation and memory, and the autoscaler,
// which asks each replica's for its load): one sample per line, NAME{LABEL="VALUE",...} VALUE,
// comments and malformed lines skipped.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

struct ScrapedSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// The samples of `text` whose name is one of `names` (all when empty).
std::vector<ScrapedSample> ParseMetricsText(std::string_view text,
                                            const std::vector<std::string>& names = {});

}  // namespace tessera
