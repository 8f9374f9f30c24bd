// summary.json of the serving experiment (docs/summary-json.md, docs/serving.md): the run's
// head (trace, replicas, engine, SLOs, KV capacity and the global-LRU reference) and one result
// per router, each naming it in "router" (and in "policy", which the report reads).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/serving/serving_experiment.h"

namespace tessera {

struct ServingHead {
  std::string trace_path;
  const LlmTrace* trace = nullptr;
  const ServingOptions* options = nullptr;
  std::int64_t kv_blocks_per_replica = 0;
  bool kv_blocks_auto = false;
  double global_lru_hit_rate = 0;
  double unlimited_hit_rate = 0;
};

nlohmann::json ServingHeadJson(const ServingHead& h);
nlohmann::json ServingRunJson(const ServingRun& r, double global_lru_hit_rate);
// One point of the curves over rate (summary "rate_sweep").
nlohmann::json ServingSweepPointJson(const ServingRun& r);

}  // namespace tessera
