// `tessera bench serving --trace FILE`: the live replay of issue 16's part 5
// (docs/serving.md). A slice of an LLM trace (Mooncake's or Azure's), time-compressed, goes
// through tessera-gateway to N tessera-engine-sim replicas (simulated engines) of an
// InferenceService under a live cluster of its own (`tessera up --gateway-port 0`, stopped at
// the end), with prompts whose blocks stand for the trace's (serving_replay.h). The same slice
// then runs through `tessera sim --experiment serving`'s code (RunServing), and the two mean
// TTFTs and prefix hit rates are compared: they are to agree within 5%.
#include <fcntl.h>
#include <fmt/core.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <thread>

#include "cli/bench_group.h"
#include "cli/commands.h"
#include "cli/daemon.h"
#include "cli/live_client.h"
#include "cli/live_commands.h"
#include "cli/serving_replay.h"
#include "cli/sim_serving.h"
#include "core/engine_profile.h"
#include "sim/schedule_benchmark.h"
#include "sim/serving/global_lru.h"
#include "sim/serving/serving_experiment.h"

extern char** environ;

namespace tessera::cli {

namespace {

using Json = nlohmann::json;

struct BenchServingFlags {
  std::string trace;
  std::int64_t skip = 0;
  std::int64_t requests = 200;
  std::int64_t warmup = 0;  // requests before the measured ones, sent but not measured
  int replicas = 4;
  std::string router = "tessera";
  double rate_scale = 1;
  double time_scale = 1;
  std::string kv_blocks;  // N, auto, or empty: the engine profile's KV cache
  double slo_ttft_ms = 5000;
  double slo_tbt_ms = 100;
  double burst_spacing_ms = 50;
  std::string load_view = "gateway";  // what the simulator's router knows of the load
  int sim_jitter_runs = 0;            // the simulated side again with jittered arrivals
  double sim_jitter_ms = 5;
  bool sim_only = false;
  std::vector<std::string> sim_routing_params;  // NAME=VALUE, the simulated side only
  std::string state;
  std::string out;
  std::string bin_dir;
};

// Runs `argv` to its end, output appended to `log`; its exit status (-1: not started).
int RunToEnd(const std::vector<std::string>& argv, const std::string& log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string ServiceSpec(const BenchServingFlags& f, const std::string& bin, int block_tokens,
                        std::int64_t kv_blocks) {
  const std::vector<std::string> command = {bin + "/tessera-engine-sim",
                                            "--model",
                                            "replay",
                                            "--block-tokens",
                                            std::to_string(block_tokens),
                                            "--kv-blocks",
                                            std::to_string(kv_blocks),
                                            "--time-scale",
                                            fmt::format("{}", f.time_scale),
                                            "--max-waiting",
                                            "4096"};
  return fmt::format(
      "apiVersion: tessera/v1\nkind: InferenceService\nmetadata: {{name: replay, queue: "
      "default}}\nspec:\n  replicas: {}\n  gpusPerReplica: 1\n  gracePeriodSeconds: 2\n"
      "  routing: {{policy: {}, blockTokens: {}}}\n  slo: {{ttftMs: {}, tbtMs: {}}}\n"
      "  command: {}\n",
      f.replicas, f.router, block_tokens, f.slo_ttft_ms, f.slo_tbt_ms, Json(command).dump());
}

// Ready replicas of default/replay as the gateway sees them.
int ReadyReplicas(const std::string& gateway) {
  ApiClient c(gateway, 2);
  auto r = c.Get("/v1/services");
  if (!r || r->status != 200) return 0;
  const Json doc = Json::parse(r->body, nullptr, false);
  if (!doc.is_object() || !doc.contains("services")) return 0;
  int ready = 0;
  for (const auto& s : doc["services"]) {
    if (s.value("name", "") != "default/replay") continue;
    for (const auto& rep : s["replicas"]) ready += rep.value("ready", false);
  }
  return ready;
}

Json LatencyJson(const LatencySummary& s) {
  return {{"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}, {"count", s.count}};
}

// Request by request, where the live and the simulated cache hits differ: how many requests,
// the tokens each side found that the other did not, the first few such requests, and the
// requests each side refused (an early rejection leaves its prompt uncached for later turns).
// Live minus simulated TTFT of each measured request both sides served: a uniform offset is
// the live path's own latency (parsing, proxying), a tail is queueing that went differently.
Json PerRequestTtft(const std::vector<ReplayOutcome>& live, const std::vector<double>& sim,
                    std::size_t from) {
  std::vector<double> diff;
  for (std::size_t i = from; i < live.size() && i < sim.size(); ++i) {
    if (live[i].status == 200 && live[i].ttft_ms >= 0 && sim[i] >= 0)
      diff.push_back(live[i].ttft_ms - sim[i]);
  }
  std::sort(diff.begin(), diff.end());
  const auto at = [&](double q) {
    return diff.empty() ? 0.0
                        : diff[static_cast<std::size_t>(q * static_cast<double>(diff.size() - 1))];
  };
  const double mean = diff.empty() ? 0
                                   : std::accumulate(diff.begin(), diff.end(), 0.0) /
                                         static_cast<double>(diff.size());
  return {{"requests", diff.size()}, {"mean", mean}, {"p10", at(0.1)}, {"p50", at(0.5)},
          {"p90", at(0.9)},          {"min", at(0)}, {"max", at(1)}};
}

// Only the measured requests (from `from` on) count; indexes are the slice's.
Json PerRequestHits(const std::vector<ReplayOutcome>& live, const std::vector<std::int64_t>& sim,
                    std::size_t from) {
  std::int64_t differ = 0, live_more = 0, sim_more = 0;
  Json first = Json::array(), live_refused = Json::array(), sim_rejected = Json::array();
  for (std::size_t i = from; i < live.size() && i < sim.size(); ++i) {
    if (live[i].status != 200) live_refused.push_back(i);
    if (sim[i] < 0) sim_rejected.push_back(i);
    if (live[i].status != 200 || sim[i] < 0 || live[i].cached_tokens == sim[i]) continue;
    ++differ;
    (live[i].cached_tokens > sim[i] ? live_more : sim_more) +=
        std::abs(live[i].cached_tokens - sim[i]);
    if (first.size() < 10)
      first.push_back({{"request", i}, {"live", live[i].cached_tokens}, {"sim", sim[i]}});
  }
  return {{"requests_hit_differently", differ}, {"hit_tokens_live_only", live_more},
          {"hit_tokens_sim_only", sim_more},    {"first", first},
          {"live_refused", live_refused},       {"sim_rejected", sim_rejected}};
}

// The measured requests' figures (from `from` on; the warm-up's only in send lateness).
Json LiveFigures(const std::vector<ReplayOutcome>& outcomes, std::size_t from, double* mean_ttft,
                 double* hit_rate) {
  std::vector<double> ttft, late;
  std::int64_t ok = 0, rejected = 0, failed = 0;
  double prompt = 0, cached = 0;
  std::map<std::string, int> errors;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    const ReplayOutcome& o = outcomes[i];
    late.push_back(o.lateness_ms);
    if (i < from) continue;
    if (o.status == 429) {
      ++rejected;
      continue;
    }
    if (o.status != 200 || o.ttft_ms < 0 || !o.error.empty()) {
      ++failed;
      ++errors[o.error.empty() ? "HTTP " + std::to_string(o.status) : o.error];
      continue;
    }
    ++ok;
    ttft.push_back(o.ttft_ms);
    prompt += static_cast<double>(o.prompt_tokens);
    cached += static_cast<double>(o.cached_tokens);
  }
  const LatencySummary t = SummarizeLatency(ttft);
  *mean_ttft = t.mean;
  *hit_rate = prompt > 0 ? cached / prompt : 0;
  const LatencySummary l = SummarizeLatency(late);
  Json j = {{"completed", ok},
            {"rejected", rejected},
            {"failed", failed},
            {"ttft_ms", LatencyJson(t)},
            {"prefix_hit_rate", *hit_rate},
            {"send_lateness_ms", LatencyJson(l)}};
  if (!errors.empty()) j["errors"] = errors;
  return j;
}

double RelDiff(double live, double sim) {
  return sim != 0 ? (live - sim) / sim : (live == 0 ? 0 : 1);
}

Result<LlmTrace> SliceOf(const BenchServingFlags& f) {
  auto all = ReadLlmTrace(f.trace, f.skip + f.warmup + f.requests);
  if (!all) return std::unexpected(all.error());
  LlmTrace t = *all;
  const auto first = static_cast<std::size_t>(std::min<std::int64_t>(f.skip, all->requests.size()));
  t.requests.assign(all->requests.begin() + static_cast<std::ptrdiff_t>(first),
                    all->requests.end());
  if (t.requests.empty()) return InvalidArgument("--trace: no request in the slice");
  const std::int64_t t0 = t.requests.front().arrival_us;
  // Requests the trace gives one instant (Mooncake's come in bursts, up to 16 at once) are
  // spread in trace order, here for both sides: sent live at once, they would reach the engines
  // in the order their prompts finish uploading and parsing, shortest first, not the trace's.
  const auto spacing = static_cast<std::int64_t>(f.burst_spacing_ms * 1000 * f.rate_scale);
  std::int64_t burst_at = -1, in_burst = 0;
  for (LlmRequest& r : t.requests) {
    in_burst = r.arrival_us == burst_at ? in_burst + 1 : 0;
    burst_at = r.arrival_us;
    r.arrival_us += in_burst * spacing;
    r.arrival_us -= t0;
    r.output_tokens = std::max<std::int64_t>(1, r.output_tokens);  // an OpenAI max_tokens >= 1
    r.prompt_tokens = std::max<std::int64_t>(1, r.prompt_tokens);
  }
  return t;
}

Status CheckFlags(const BenchServingFlags& f) {
  if (f.replicas < 1 || f.replicas > 64) return InvalidArgument("--replicas: 1 to 64");
  if (!(f.rate_scale > 0)) return InvalidArgument("--rate-scale: must be positive");
  if (!(f.time_scale > 0)) return InvalidArgument("--time-scale: must be positive");
  if (f.requests < 1) return InvalidArgument("--requests: must be >= 1");
  if (f.skip < 0) return InvalidArgument("--skip: must be >= 0");
  if (f.warmup < 0) return InvalidArgument("--warmup: must be >= 0");
  if (f.sim_jitter_runs < 0 || f.sim_jitter_runs > 100)
    return InvalidArgument("--sim-jitter-runs: 0 to 100");
  if (!(f.sim_jitter_ms > 0)) return InvalidArgument("--sim-jitter-ms: must be positive");
  if (!f.sim_routing_params.empty() && !f.sim_only) {
    return InvalidArgument(
        "--sim-routing-param: only with --sim-only (the live gateway routes with the defaults)");
  }
  return {};
}

// The slice as both sides run it.
struct ReplaySlice {
  LlmTrace live;  // the trace's own block ids (the prompts are built from them)
  LlmTrace sim;   // the same requests with the chained hashes of those prompts' blocks
  int block_tokens = 16;
  std::int64_t kv_blocks = 1;
  std::size_t measured_from = 0;  // the warm-up's end
};

Result<ReplaySlice> PrepareSlice(const BenchServingFlags& f) {
  auto slice = SliceOf(f);
  if (!slice) return std::unexpected(slice.error());
  ReplaySlice s;
  // The engines and the gateway hash blocks of the trace's size (16 for a trace without hashes).
  s.block_tokens = slice->block_tokens > 0 ? slice->block_tokens : 16;
  s.sim = ReplayTraceForSim(*slice, s.block_tokens);
  // Empty: the profile's, as the engines' own default.
  auto kv_blocks = KvBlocksPerReplica(f.kv_blocks, s.sim, s.block_tokens, f.replicas,
                                      EngineProfile{}.kv_cache_tokens / s.block_tokens);
  if (!kv_blocks) return std::unexpected(kv_blocks.error());
  s.kv_blocks = std::max<std::int64_t>(*kv_blocks, 1);
  s.measured_from = static_cast<std::size_t>(
      std::min<std::int64_t>(f.warmup, static_cast<std::int64_t>(slice->requests.size())));
  s.live = std::move(*slice);
  return s;
}

struct LiveRun {
  std::vector<ReplayOutcome> outcomes;
  double seconds = 0;
};

// Brings up a cluster of its own, submits the service, replays the slice through the gateway
// and stops the cluster again.
Result<LiveRun> RunLive(const BenchServingFlags& f, const ReplaySlice& s) {
  namespace fs = std::filesystem;
  const std::string bin = f.bin_dir.empty() ? SelfDirectory() : f.bin_dir;
  const std::string state =
      f.state.empty()
          ? (fs::temp_directory_path() / ("tessera-bench-serving-" + std::to_string(::getpid())))
                .string()
          : f.state;
  fs::create_directories(state);
  const std::string log = state + "/bench.log";
  std::cerr << fmt::format("cluster: tessera up --state {} (log {})\n", state, log);
  const std::vector<std::string> up = {
      bin + "/tessera", "up",     "--state",        state, "--agents",  std::to_string(f.replicas),
      "--gpus",         "1xH100", "--gateway-port", "0",   "--timeout", "60"};
  if (RunToEnd(up, log) != 0)
    return FailedPrecondition("tessera up failed; see " + log + " and " + state + "/logs");
  const auto down = [&] { RunToEnd({bin + "/tessera", "down", "--state", state}, log); };
  std::string gateway;
  std::getline(std::ifstream(state + "/gateway-endpoint"), gateway);
  ClusterFlags cluster;
  cluster.state = state;
  auto url = ResolveServer(cluster);
  if (!url) {
    down();
    return std::unexpected(url.error());
  }
  ApiClient api(*url);
  auto submitted = JsonOf(api.Post("/v1/jobs", ServiceSpec(f, bin, s.block_tokens, s.kv_blocks)));
  if (!submitted) {
    down();
    return std::unexpected(submitted.error());
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (ReadyReplicas(gateway) < f.replicas) {
    if (std::chrono::steady_clock::now() > deadline) {
      down();
      return FailedPrecondition("the gateway did not see " + std::to_string(f.replicas) +
                                " ready replicas within 60 s; see " + state + "/logs");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // KV-event subscriptions

  std::cerr << "live: replaying through " << gateway << "\n";
  LiveRun run;
  const auto wall = std::chrono::steady_clock::now();
  run.outcomes = ReplayThroughGateway(s.live, s.live.block_tokens,
                                      {gateway, "replay", f.rate_scale, f.time_scale, 600});
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
  down();
  if (f.state.empty()) fs::remove_all(state);
  return run;
}

ServingOptions SimOptions(const BenchServingFlags& f, const ReplaySlice& s, LoadView view) {
  ServingOptions o;
  o.replicas = f.replicas;
  o.rate_scale = f.rate_scale;
  o.kv_blocks_per_replica = s.kv_blocks;
  o.slo_ttft_ms = f.slo_ttft_ms;
  o.slo_tbt_ms = f.slo_tbt_ms;
  o.block_tokens = s.block_tokens;
  o.load_view = view;
  o.warmup_requests = static_cast<std::int64_t>(s.measured_from);
  return o;
}

Json SimJson(const ServingRun& sim) {
  return {{"completed", sim.completed},
          {"rejected", sim.rejected},
          {"ttft_ms", LatencyJson(sim.ttft_ms)},
          {"prefix_hit_rate", sim.prefix_hit_rate}};
}

// The simulated side again with each arrival moved by up to --sim-jitter-ms (seeds 1..K): how
// far timing noise of that size alone moves the two figures, the spread no live run can be
// expected to agree better than.
Result<Json> JitterSpread(const BenchServingFlags& f, const ReplaySlice& s, ServingOptions o,
                          const ServingRun& base) {
  o.arrival_jitter_us = static_cast<std::int64_t>(f.sim_jitter_ms * 1000 * f.rate_scale);
  double ttft_lo = base.ttft_ms.mean, ttft_hi = ttft_lo;
  double hit_lo = base.prefix_hit_rate, hit_hi = hit_lo;
  double ttft_sum = 0, hit_sum = 0;
  Json runs = Json::array();
  for (int seed = 1; seed <= f.sim_jitter_runs; ++seed) {
    o.jitter_seed = static_cast<std::uint64_t>(seed);
    auto run = RunServing(s.sim, f.router, o);
    if (!run) return std::unexpected(run.error());
    ttft_lo = std::min(ttft_lo, run->ttft_ms.mean);
    ttft_hi = std::max(ttft_hi, run->ttft_ms.mean);
    hit_lo = std::min(hit_lo, run->prefix_hit_rate);
    hit_hi = std::max(hit_hi, run->prefix_hit_rate);
    ttft_sum += run->ttft_ms.mean;
    hit_sum += run->prefix_hit_rate;
    std::int64_t differ = 0;  // measured requests whose cache hit the jitter changed
    Json first = Json::array();
    for (std::size_t i = s.measured_from; i < run->hit_tokens.size(); ++i) {
      if (run->hit_tokens[i] == base.hit_tokens[i]) continue;
      ++differ;
      if (first.size() < 3)
        first.push_back(
            {{"request", i}, {"base", base.hit_tokens[i]}, {"jittered", run->hit_tokens[i]}});
    }
    runs.push_back({{"seed", seed},
                    {"ttft_mean_ms", run->ttft_ms.mean},
                    {"prefix_hit_rate", run->prefix_hit_rate},
                    {"requests_hit_differently", differ},
                    {"first", first}});
  }
  const double k = f.sim_jitter_runs;
  return Json{{"runs", runs},
              {"jitter_ms", f.sim_jitter_ms},
              {"ttft_mean_ms", ttft_sum / k},  // over the jittered runs
              {"prefix_hit_rate", hit_sum / k},
              {"ttft_mean_rel_spread",
               {RelDiff(ttft_lo, base.ttft_ms.mean), RelDiff(ttft_hi, base.ttft_ms.mean)}},
              {"hit_rate_rel_spread",
               {RelDiff(hit_lo, base.prefix_hit_rate), RelDiff(hit_hi, base.prefix_hit_rate)}}};
}

Json HeadJson(const BenchServingFlags& f, const ReplaySlice& s) {
  return {{"benchmark", "serving-replay"},
          {"machine", MachineDescription()},
          {"simulated_engines", true},
          {"trace",
           {{"path", f.trace},
            {"skip", f.skip},
            {"warmup", s.measured_from},
            {"requests", s.live.requests.size() - s.measured_from},
            {"format", s.live.format},
            {"block_tokens", s.block_tokens}}},
          {"replicas", f.replicas},
          {"router", f.router},
          {"rate_scale", f.rate_scale},
          {"time_scale", f.time_scale},
          {"kv_blocks_per_replica", s.kv_blocks},
          {"slo_ttft_ms", f.slo_ttft_ms},
          {"slo_tbt_ms", f.slo_tbt_ms},
          {"burst_spacing_ms", f.burst_spacing_ms},
          {"sim_load_view", f.load_view}};
}

void PrintComparison(const Json& live, const ServingRun& sim, double ttft_diff, double hit_diff) {
  std::cout << fmt::format(
      "{:<6} {:>10} {:>10} {:>10} {:>9} {:>9}\n{:<6} {:>10.1f} {:>10.1f} {:>9.2f}% {:>9} {:>9}\n"
      "{:<6} {:>10.1f} {:>10.1f} {:>9.2f}% {:>9} {:>9}\nTTFT mean {:+.1f}%, hit rate {:+.1f}% "
      "(live vs simulated)\n",
      "", "TTFT mean", "TTFT p99", "hit rate", "served", "rejected", "live",
      live["ttft_ms"].value("mean", 0.0), live["ttft_ms"].value("p99", 0.0),
      100 * live.value("prefix_hit_rate", 0.0), live.value("completed", 0),
      live.value("rejected", 0), "sim", sim.ttft_ms.mean, sim.ttft_ms.p99,
      100 * sim.prefix_hit_rate, sim.completed, sim.rejected, 100 * ttft_diff, 100 * hit_diff);
}

Result<Json> RunBenchServing(const BenchServingFlags& f) {
  if (Status ok = CheckFlags(f); !ok) return std::unexpected(ok.error());
  auto load_view = ParseLoadView(f.load_view);
  if (!load_view) return InvalidArgument("--sim-" + load_view.error().message);
  auto slice = PrepareSlice(f);
  if (!slice) return std::unexpected(slice.error());
  std::cerr << fmt::format(
      "slice: {} requests of {} after {} warm-up ones ({}-token blocks); {} simulated replicas, "
      "{} KV blocks each; rate x{}, time scale {}\n",
      slice->live.requests.size() - slice->measured_from, f.trace, slice->measured_from,
      slice->block_tokens, f.replicas, slice->kv_blocks, f.rate_scale, f.time_scale);
  ServingOptions o = SimOptions(f, *slice, *load_view);
  if (auto ok = ApplyRoutingParams(f.sim_routing_params, &o.routing); !ok) {
    return std::unexpected(ok.error());
  }
  auto sim = RunServing(slice->sim, f.router, o);
  if (!sim) return std::unexpected(sim.error());
  Json out = HeadJson(f, *slice);
  out["sim"] = SimJson(*sim);
  if (f.sim_jitter_runs > 0) {
    auto spread = JitterSpread(f, *slice, o, *sim);
    if (!spread) return std::unexpected(spread.error());
    out["sim_jitter"] = *spread;
  }
  if (f.sim_only) return out;

  auto live_run = RunLive(f, *slice);
  if (!live_run) return std::unexpected(live_run.error());
  double live_ttft = 0, live_hit = 0;
  Json live = LiveFigures(live_run->outcomes, slice->measured_from, &live_ttft, &live_hit);
  live["wall_seconds"] = live_run->seconds;
  const double ttft_diff = RelDiff(live_ttft, sim->ttft_ms.mean);
  const double hit_diff = RelDiff(live_hit, sim->prefix_hit_rate);
  out["per_request"] = PerRequestHits(live_run->outcomes, sim->hit_tokens, slice->measured_from);
  out["per_request"]["ttft_live_minus_sim_ms"] =
      PerRequestTtft(live_run->outcomes, sim->request_ttft_ms, slice->measured_from);
  out["live"] = live;
  out["ttft_mean_rel_diff"] = ttft_diff;
  out["hit_rate_rel_diff"] = hit_diff;
  out["agree_within_5pct"] = std::abs(ttft_diff) <= 0.05 && std::abs(hit_diff) <= 0.05;
  if (out.contains("sim_jitter")) {  // against the simulator's mean under timing noise
    const Json& j = out["sim_jitter"];
    out["live_vs_jitter_mean"] = {
        {"ttft_mean_rel_diff", RelDiff(live_ttft, j.value("ttft_mean_ms", 0.0))},
        {"hit_rate_rel_diff", RelDiff(live_hit, j.value("prefix_hit_rate", 0.0))}};
  }
  PrintComparison(live, *sim, ttft_diff, hit_diff);
  return out;
}

}  // namespace

void RegisterBenchServingCommand(CLI::App& app) {
  CLI::App* bench = &BenchGroup(app);
  auto flags = std::make_shared<BenchServingFlags>();
  auto* cmd = bench->add_subcommand(
      "serving",
      "Replay an LLM trace slice live (tessera up, tessera-gateway, simulated engine replicas) "
      "and compare mean TTFT and hit rate with the simulator on the same slice");
  cmd->add_option("--trace", flags->trace, "Mooncake JSONL or Azure CSV trace")->required();
  cmd->add_option("--skip", flags->skip, "Requests to skip at the trace's start")
      ->capture_default_str();
  cmd->add_option("--requests", flags->requests, "Requests measured in the slice")
      ->capture_default_str();
  cmd->add_option("--warmup", flags->warmup,
                  "Requests sent (and simulated) before the measured ones, left out of both "
                  "sides' figures: the slice is --skip's next warmup + requests")
      ->capture_default_str();
  cmd->add_option("--replicas", flags->replicas, "Engine replicas (one agent and GPU each)")
      ->capture_default_str();
  cmd->add_option("--router", flags->router, "The service's routing policy")->capture_default_str();
  cmd->add_option("--rate-scale", flags->rate_scale, "Request rate x this (arrivals / X)")
      ->capture_default_str();
  cmd->add_option("--time-scale", flags->time_scale,
                  "Wall time per modelled time, for the engines and the arrivals (0.5: twice "
                  "as fast); TTFTs are reported in modelled ms")
      ->capture_default_str();
  cmd->add_option("--kv-blocks-per-replica", flags->kv_blocks,
                  "KV blocks per replica, N or auto (a 1/N share of what one global LRU cache "
                  "needs for 90% of the slice's unlimited hit rate); default: the engine "
                  "profile's KV cache");
  cmd->add_option("--slo-ttft-ms", flags->slo_ttft_ms, "TTFT SLO (modelled ms)")
      ->capture_default_str();
  cmd->add_option("--slo-tbt-ms", flags->slo_tbt_ms, "TBT SLO (modelled ms)")
      ->capture_default_str();
  cmd->add_option("--burst-spacing-ms", flags->burst_spacing_ms,
                  "Requests of one trace instant are sent this far apart (modelled ms, after "
                  "--rate-scale), in trace order, live and simulated alike")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--sim-load-view", flags->load_view,
                  "What the simulator's router knows of the load: gateway (what the live "
                  "gateway knows: the same decision inputs) or engine (the engines' own state)")
      ->capture_default_str();
  cmd->add_option("--sim-jitter-runs", flags->sim_jitter_runs,
                  "Run the simulated side this many times more with each arrival moved by up to "
                  "--sim-jitter-ms (seeded): the spread timing noise alone causes")
      ->capture_default_str();
  cmd->add_option("--sim-jitter-ms", flags->sim_jitter_ms,
                  "The largest arrival jitter of --sim-jitter-runs (modelled ms)")
      ->capture_default_str();
  cmd->add_flag("--sim-only", flags->sim_only,
                "Only the simulated side (and its jitter runs); no cluster");
  cmd->add_option("--sim-routing-param", flags->sim_routing_params,
                  "With --sim-only: NAME=VALUE overriding a routing parameter (as tessera sim's "
                  "--routing-param)")
      ->delimiter(',');
  cmd->add_option("--state", flags->state, "Cluster state directory (default: a temporary one)");
  cmd->add_option("--bin-dir", flags->bin_dir,
                  "Where tessera, tesserad, the agent, gateway and "
                  "engine are (default: beside tessera)");
  cmd->add_option("--out", flags->out, "Write the JSON result here");
  cmd->callback([flags] {
    auto r = RunBenchServing(*flags);
    if (!r) {
      PrintError(r.error());
      SetExitCode(1);
      return;
    }
    std::cout << r->dump(2) << "\n";
    if (!flags->out.empty()) std::ofstream(flags->out) << r->dump(2) << "\n";
    SetExitCode(flags->sim_only || r->value("agree_within_5pct", false) ? 0 : 3);
  });
}

}  // namespace tessera::cli
