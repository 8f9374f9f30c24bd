#include "sim/serving/serving_experiment.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "core/rng.h"
#include "serve/engine_model.h"
#include "serve/routed_load.h"
#include "serve/router.h"
#include "sim/event_loop.h"
#include "sim/serving/serving_metrics.h"

namespace tessera {

namespace {

struct ServingEvent {
  enum class Kind { kArrival, kStepDone };
  Kind kind = Kind::kArrival;
  std::size_t index = 0;  // the request (arrival) or the replica (step done)
};

class ServingSimulation {
 public:
  ServingSimulation(const LlmTrace& trace, const ServingOptions& options, serve::Router router,
                    int block_tokens, std::int64_t gpu_blocks)
      : trace_(trace),
        options_(options),
        arrivals_(ArrivalTimes(trace, options)),
        warmup_(static_cast<std::size_t>(std::clamp<std::int64_t>(
            options.warmup_requests, 0, static_cast<std::int64_t>(trace.requests.size())))),
        router_(std::move(router)),
        metrics_(trace.requests.size(), options.slo_ttft_ms, options.slo_tbt_ms, warmup_,
                 MeasureFrom(arrivals_, warmup_)),
        loads_(static_cast<std::size_t>(options.replicas)),
        running_(static_cast<std::size_t>(options.replicas)),
        routed_(options.replicas),
        tickets_(trace.requests.size()) {
    const std::int64_t host_blocks = options.engine.host_cache_tokens / block_tokens;
    for (int r = 0; r < options.replicas; ++r) {
      engines_.emplace_back(options.engine, block_tokens, gpu_blocks, host_blocks);
    }
  }

  // Runs the trace to the end; returns the span of the measured (scaled) arrivals in
  // microseconds.
  std::int64_t Run() {
    std::int64_t last_arrival = 0;
    for (std::size_t i = 0; i < arrivals_.size(); ++i) {
      last_arrival = std::max(last_arrival, arrivals_[i]);
      loop_.Schedule(arrivals_[i], {ServingEvent::Kind::kArrival, i});
    }
    loop_.Run(
        [&](std::int64_t now, const ServingEvent& e) {
          if (e.kind == ServingEvent::Kind::kArrival) {
            OnArrival(now, e.index);
          } else {
            OnStepDone(now, e.index);
          }
        },
        [&](std::int64_t now) {
          for (std::size_t r = 0; r < engines_.size(); ++r)
            running_[r] = engines_[r].running_count();
          metrics_.Sample(now, running_);
        });
    return std::max<std::int64_t>(1, last_arrival - MeasureFrom(arrivals_, warmup_));
  }

  const ServingMetrics& metrics() const { return metrics_; }
  std::uint64_t events() const { return loop_.dispatched(); }

 private:
  void OnArrival(std::int64_t now, std::size_t i) {
    const LlmRequest& req = trace_.requests[i];
    metrics_.Arrived(i, now, req.prompt_tokens);
    if (options_.load_view == LoadView::kGateway) {
      routed_.Fill(loads_);
    } else {
      for (std::size_t r = 0; r < engines_.size(); ++r) loads_[r] = engines_[r].Load();
    }
    const serve::RouteRequest route{req.block_hashes, req.prompt_tokens, req.output_tokens};
    const serve::RouteDecision d = router_.Route(route, loads_);
    if (d.replica < 0) {
      metrics_.Rejected(i, std::string(serve::RejectReasonName(d.reason)));
      return;
    }
    auto& engine = engines_[static_cast<std::size_t>(d.replica)];
    if (!engine.Enqueue({static_cast<std::int64_t>(i), req.block_hashes, req.prompt_tokens,
                         req.output_tokens})) {
      metrics_.Rejected(i, "larger than a replica's KV cache or context");
      return;
    }
    const std::int64_t matched =
        static_cast<std::int64_t>(router_.last_match()[static_cast<std::size_t>(d.replica)]) *
        engine.block_tokens();
    tickets_[i] = routed_.Routed(d.replica, req.prompt_tokens, matched);
    if (!engine.stepping()) StartStep(now, static_cast<std::size_t>(d.replica));
  }

  void StartStep(std::int64_t now, std::size_t r) {
    const std::int64_t duration = engines_[r].BeginStep();
    // The simulated engine publishes a step's events when the step ends, those of its admission
    // (evictions) included: the gateway learns them then, and so does its view here.
    if (options_.load_view != LoadView::kGateway) ApplyKvEvents(r);
    if (duration > 0) loop_.Schedule(now + duration, {ServingEvent::Kind::kStepDone, r});
  }

  void OnStepDone(std::int64_t now, std::size_t r) {
    const serve::StepOutcome outcome = engines_[r].FinishStep();
    for (const serve::Admission& a : outcome.admitted) {
      metrics_.Admitted(static_cast<std::size_t>(a.id), a);
    }
    for (const serve::TokenOutput& t : outcome.tokens) {
      const auto i = static_cast<std::size_t>(t.id);
      metrics_.Token(i, now, t.last);
      if (t.first) routed_.FirstToken(tickets_[i]);
      if (t.last) routed_.Finished(tickets_[i], true);
    }
    ApplyKvEvents(r);
    StartStep(now, r);
  }

  void ApplyKvEvents(std::size_t r) {
    const std::vector<serve::KvEvent> events = engines_[r].TakeKvEvents();
    if (!events.empty()) router_.ApplyKvEvents(static_cast<int>(r), events);
  }

  // Arrival times: the trace's ÷ the rate scale, each moved by its jitter draw.
  static std::vector<std::int64_t> ArrivalTimes(const LlmTrace& trace, const ServingOptions& o) {
    std::vector<std::int64_t> at;
    at.reserve(trace.requests.size());
    Rng jitter(o.jitter_seed);
    for (const LlmRequest& r : trace.requests) {
      at.push_back(std::llround(static_cast<double>(r.arrival_us) / o.rate_scale));
      if (o.arrival_jitter_us > 0)
        at.back() += static_cast<std::int64_t>(
            jitter.Uniform(static_cast<std::uint64_t>(o.arrival_jitter_us)));
    }
    return at;
  }
  // The first measured arrival (0 without a warm-up: the trace's start).
  static std::int64_t MeasureFrom(const std::vector<std::int64_t>& arrivals, std::size_t warmup) {
    std::int64_t from = 0;
    if (warmup == 0) return from;
    from = std::numeric_limits<std::int64_t>::max();
    for (std::size_t i = warmup; i < arrivals.size(); ++i) from = std::min(from, arrivals[i]);
    return from == std::numeric_limits<std::int64_t>::max() ? 0 : from;
  }

  const LlmTrace& trace_;
  const ServingOptions& options_;
  std::vector<std::int64_t> arrivals_;
  std::size_t warmup_;
  serve::Router router_;
  ServingMetrics metrics_;
  EventLoop<ServingEvent> loop_;
  std::vector<serve::EngineReplica> engines_;
  std::vector<serve::ReplicaLoad> loads_;
  std::vector<std::int32_t> running_;
  serve::RoutedLoad routed_;  // the gateway's view, kept in either case (cheap)
  std::vector<serve::RoutedLoad::Ticket> tickets_;
};

}  // namespace

Result<LoadView> ParseLoadView(std::string_view name) {
  if (name == "engine") return LoadView::kEngine;
  if (name == "gateway") return LoadView::kGateway;
  return InvalidArgument("load-view: '" + std::string(name) + "' is not engine or gateway");
}

std::string_view LoadViewName(LoadView view) {
  return view == LoadView::kGateway ? "gateway" : "engine";
}

Result<ServingRun> RunServing(const LlmTrace& trace, const std::string& router,
                              const ServingOptions& options) {
  if (options.replicas <= 0) return InvalidArgument("replicas: must be positive");
  if (!(options.rate_scale > 0)) return InvalidArgument("rate-scale: must be positive");
  auto policy = serve::MakeRoutingPolicy(router);
  if (!policy) return std::unexpected(policy.error());
  const int block_tokens = trace.block_tokens > 0 ? trace.block_tokens : options.block_tokens;
  const std::int64_t gpu_blocks = options.kv_blocks_per_replica > 0
                                      ? options.kv_blocks_per_replica
                                      : options.engine.kv_cache_tokens / block_tokens;
  if (gpu_blocks <= 0) return InvalidArgument("kv-blocks-per-replica: must be positive");
  serve::RoutingConfig config = options.routing;
  config.slo_ttft_ms = options.slo_ttft_ms;
  const auto start = std::chrono::steady_clock::now();
  // The gateway bounds its index per replica (serve::IndexCapacityFor); so does its view here.
  const std::int64_t index_capacity = options.load_view == LoadView::kGateway
                                          ? serve::IndexCapacityFor(options.engine, block_tokens)
                                          : 0;
  ServingSimulation sim(trace, options,
                        serve::Router(std::move(*policy), options.replicas, block_tokens,
                                      options.engine, config, index_capacity),
                        block_tokens, gpu_blocks);
  const std::int64_t duration = sim.Run();
  ServingRun run;
  run.router = router;
  run.rate_scale = options.rate_scale;
  sim.metrics().Finish(duration, &run);
  run.events = sim.events();
  run.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

}  // namespace tessera
