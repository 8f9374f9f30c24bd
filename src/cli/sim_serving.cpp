#include "cli/sim_serving.h"

#include <fmt/core.h>

#include <charconv>
#include <iostream>

#include "cli/commands.h"
#include "sim/serving/global_lru.h"
#include "sim/serving/serving_experiment.h"
#include "sim/serving/serving_summary.h"
#include "spec/engine_profile_yaml.h"

namespace tessera::cli {

namespace {

void PrintRun(const ServingRun& r) {
  std::cout << fmt::format(
      "{:<14} {:>7.1f}% {:>9.0f} {:>9.0f} {:>8.1f} {:>7.1f}% {:>9.3f} {:>8} {:>5.2f} ({:.2f})\n",
      r.router, 100 * r.prefix_hit_rate, r.ttft_ms.p50, r.ttft_ms.p99, r.tbt_ms.p99,
      100 * r.slo_attainment, r.goodput_rps, r.rejected, r.load_imbalance, r.load_imbalance_floor);
}

}  // namespace

void AddServingFlags(CLI::App* sim, ServingFlags* f) {
  sim->add_option("--replicas", f->replicas, "serving: engine replicas (simulated)")
      ->capture_default_str();
  sim->add_option("--engine", f->engine,
                  "serving: engine profile, built-in (llama3-8b-h100) or a YAML file")
      ->capture_default_str();
  sim->add_option("--router", f->routers,
                  "serving: comma-separated routers (round-robin, least-request, prefix, "
                  "weighted, tessera)")
      ->capture_default_str();
  sim->add_option("--rate-scale", f->rate_scale, "serving: request rate x this (arrivals / X)")
      ->capture_default_str();
  sim->add_option("--kv-blocks-per-replica", f->kv_blocks_per_replica,
                  "serving: KV cache blocks per replica, N or auto (a 1/N share of the capacity at "
                  "which one global LRU cache reaches 90% of the trace's unlimited hit rate); "
                  "default: the engine profile's");
  sim->add_option("--slo-ttft-ms", f->slo_ttft_ms, "serving: time-to-first-token SLO")
      ->capture_default_str();
  sim->add_option("--slo-tbt-ms", f->slo_tbt_ms,
                  "serving: time-between-tokens SLO (a request's mean token gap)")
      ->capture_default_str();
  sim->add_option("--rate-sweep", f->rate_sweep,
                  "serving: rate scales to run every router at as well (curves over rate)")
      ->delimiter(',');
  sim->add_option("--routing-param", f->routing_params,
                  "serving: NAME=VALUE overriding a routing policy's parameter (hot_rel, hot_abs, "
                  "work_weight, reject_factor, cache_threshold, ...; docs/serving.md)")
      ->delimiter(',');
  sim->add_option("--load-view", f->load_view,
                  "serving: what the router knows of the replicas' load: engine (the engines' own "
                  "state) or gateway (what tessera-gateway knows from its own requests)")
      ->capture_default_str();
  sim->add_option("--max-requests", f->max_requests,
                  "serving: read only the trace's first N requests (0 = all)")
      ->capture_default_str();
}

Result<std::int64_t> KvBlocksPerReplica(const std::string& flag, const LlmTrace& trace,
                                        int block_tokens, int replicas,
                                        std::int64_t profile_blocks) {
  if (flag.empty()) return profile_blocks;
  if (flag == "auto") {
    if (trace.block_tokens == 0) {
      return InvalidArgument("--kv-blocks-per-replica: auto needs a trace with block hashes (" +
                             trace.format + " has none); give a number");
    }
    const std::int64_t total = CapacityForHitRateFraction(trace.requests, block_tokens, 0.9);
    return (total + replicas - 1) / replicas;
  }
  std::int64_t n = 0;
  auto [p, ec] = std::from_chars(flag.data(), flag.data() + flag.size(), n);
  if (ec != std::errc() || p != flag.data() + flag.size() || n <= 0) {
    return InvalidArgument("--kv-blocks-per-replica: '" + flag +
                           "' is neither auto nor a whole number > 0");
  }
  return n;
}

Status ApplyRoutingParams(const std::vector<std::string>& params, serve::RoutingConfig* config) {
  for (const std::string& p : params) {
    const auto eq = p.find('=');
    double value = 0;
    const char* end = p.data() + p.size();
    auto [at, ec] = eq == std::string::npos
                        ? std::from_chars_result{p.data(), std::errc::invalid_argument}
                        : std::from_chars(p.data() + eq + 1, end, value);
    if (ec != std::errc() || at != end) {
      return InvalidArgument("--routing-param: '" + p + "' is not NAME=NUMBER");
    }
    if (auto s = serve::SetRoutingParam(config, p.substr(0, eq), value); !s) {
      return InvalidArgument("--" + s.error().message);
    }
  }
  return {};
}

Result<nlohmann::json> RunServingExperiment(const ServingFlags& flags, const std::string& path) {
  if (flags.replicas <= 0) return InvalidArgument("--replicas: must be positive");
  if (!(flags.rate_scale > 0)) return InvalidArgument("--rate-scale: must be positive");
  if (!(flags.slo_ttft_ms > 0)) return InvalidArgument("--slo-ttft-ms: must be positive");
  if (!(flags.slo_tbt_ms > 0)) return InvalidArgument("--slo-tbt-ms: must be positive");
  if (flags.max_requests < 0) return InvalidArgument("--max-requests: must be >= 0");
  for (double s : flags.rate_sweep) {
    if (!(s > 0)) return InvalidArgument("--rate-sweep: every scale must be positive");
  }
  ServingOptions options;
  auto view = ParseLoadView(flags.load_view);
  if (!view) return InvalidArgument("--" + view.error().message);
  options.load_view = *view;
  options.replicas = flags.replicas;
  options.rate_scale = flags.rate_scale;
  options.slo_ttft_ms = flags.slo_ttft_ms;
  options.slo_tbt_ms = flags.slo_tbt_ms;
  options.routers = SplitCommas(flags.routers);
  if (options.routers.empty()) return InvalidArgument("--router: names no router");
  for (const std::string& r : options.routers) {
    if (auto p = serve::MakeRoutingPolicy(r); !p) {
      return InvalidArgument("--" + p.error().message);
    }
  }
  if (auto ok = ApplyRoutingParams(flags.routing_params, &options.routing); !ok) {
    return std::unexpected(ok.error());
  }
  auto engine = LoadEngineProfile(flags.engine);
  if (!engine) return InvalidArgument("--engine: " + engine.error().message);
  options.engine = *engine;
  auto trace = ReadLlmTrace(path, flags.max_requests);
  if (!trace) return InvalidArgument("--trace: " + trace.error().message);
  const int block_tokens = trace->block_tokens > 0 ? trace->block_tokens : options.block_tokens;

  ServingHead head{path, &*trace, &options};
  const double unlimited = GlobalLruHitRate(trace->requests, block_tokens, 0);
  auto kv_blocks =
      KvBlocksPerReplica(flags.kv_blocks_per_replica, *trace, block_tokens, flags.replicas,
                         options.engine.kv_cache_tokens / block_tokens);
  if (!kv_blocks) return std::unexpected(kv_blocks.error());
  head.kv_blocks_per_replica = *kv_blocks;
  head.kv_blocks_auto = flags.kv_blocks_per_replica == "auto";
  options.kv_blocks_per_replica = head.kv_blocks_per_replica;
  head.unlimited_hit_rate = unlimited;
  head.global_lru_hit_rate =
      GlobalLruHitRate(trace->requests, block_tokens, head.kv_blocks_per_replica * flags.replicas);

  std::cerr << fmt::format(
      "trace: {} requests ({}, {}-token blocks); {} simulated replicas of {} ({} KV blocks "
      "each{}); global LRU hit rate {:.1f}% (unlimited {:.1f}%)\n",
      trace->requests.size(), trace->format, block_tokens, flags.replicas, options.engine.name,
      head.kv_blocks_per_replica, head.kv_blocks_auto ? ", auto" : "",
      100 * head.global_lru_hit_rate, 100 * unlimited);
  nlohmann::json summary = ServingHeadJson(head);
  std::cout << fmt::format("{:<14} {:>8} {:>9} {:>9} {:>8} {:>8} {:>9} {:>8} {:>9}\n", "router",
                           "hit rate", "TTFT p50", "TTFT p99", "TBT p99", "SLO", "goodput",
                           "rejected", "imbalance (floor)");
  for (const std::string& router : options.routers) {
    auto run = RunServing(*trace, router, options);
    if (!run) return std::unexpected(run.error());
    std::cerr << fmt::format("  {} done: {} events, {:.2f} s\n", router, run->events,
                             run->wall_seconds);
    PrintRun(*run);
    summary["results"].push_back(ServingRunJson(*run, head.global_lru_hit_rate));
  }
  if (!flags.rate_sweep.empty()) summary["rate_sweep"] = nlohmann::json::array();
  for (double scale : flags.rate_sweep) {
    ServingOptions at = options;
    at.rate_scale = scale;
    std::cerr << fmt::format("rate x{:g}:\n", scale);
    for (const std::string& router : options.routers) {
      auto run = RunServing(*trace, router, at);
      if (!run) return std::unexpected(run.error());
      std::cerr << "  ";
      PrintRun(*run);
      summary["rate_sweep"].push_back(ServingSweepPointJson(*run));
    }
  }
  return summary;
}

}  // namespace tessera::cli
