// `tessera sim --experiment serving`: the flags and the run (docs/serving.md).
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "serve/routing_policy.h"
#include "sim/trace/llm_trace.h"

namespace tessera::cli {

struct ServingFlags {
  int replicas = 16;
  std::string engine = "llama3-8b-h100";
  std::string routers = "round-robin,least-request,prefix,weighted,tessera";
  double rate_scale = 1;
  std::string kv_blocks_per_replica;  // N, auto, or empty: the engine profile's KV cache
  double slo_ttft_ms = 5000;
  double slo_tbt_ms = 100;
  std::vector<double> rate_sweep;
  std::int64_t max_requests = 0;
  std::vector<std::string> routing_params;  // NAME=VALUE, serve::SetRoutingParam's names
  std::string load_view = "engine";         // engine or gateway (sim::LoadView)
};

void AddServingFlags(CLI::App* sim, ServingFlags* flags);

// --kv-blocks-per-replica (`flag`): a whole number > 0; "auto", a 1/`replicas` share of the
// capacity at which one global LRU cache reaches 90% of `trace`'s unlimited hit rate (its
// requests need block hashes); empty, `profile_blocks` (the engine profile's KV cache).
Result<std::int64_t> KvBlocksPerReplica(const std::string& flag, const LlmTrace& trace,
                                        int block_tokens, int replicas,
                                        std::int64_t profile_blocks);

// --routing-param's NAME=NUMBER values (serve::SetRoutingParam's names) into `config`.
Status ApplyRoutingParams(const std::vector<std::string>& params, serve::RoutingConfig* config);

// Runs every router on the trace (and the rate sweep); returns summary.json, having printed the
// table to stdout and progress to stderr.
Result<nlohmann::json> RunServingExperiment(const ServingFlags& flags, const std::string& trace);

}  // namespace tessera::cli
