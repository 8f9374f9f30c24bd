// One routing decision with 256 replicas and a 1,000,000-block KV index (issue 16's speed
// target: <= 20 us median). Prompts are 64 blocks (1,024 tokens at 16 per block) sharing a
// cached prefix of 0..48 blocks with some replica.
//   build/route_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <vector>

#include "core/rng.h"
#include "serve/router.h"

namespace tessera::serve {
namespace {

constexpr int kReplicas = 256;
constexpr int kChainBlocks = 50;
constexpr int kChains = 1'000'000 / kChainBlocks;

struct Setup {
  std::vector<std::vector<BlockHash>> chains;
  std::vector<ReplicaLoad> loads;
};

Setup MakeSetup(Router* router) {
  Setup s;
  Rng rng(7);
  s.chains.resize(kChains);
  for (int c = 0; c < kChains; ++c) {
    for (int b = 0; b < kChainBlocks; ++b) s.chains[c].push_back(rng.Next());
    std::vector<ReplicaLoad> loads(kReplicas);
    // Recorded as the replica's KV "stored" events: one replica per chain.
    const std::vector<KvEvent> events = [&] {
      std::vector<KvEvent> e;
      for (BlockHash h : s.chains[c]) e.push_back({KvEvent::Kind::kStored, h});
      return e;
    }();
    router->ApplyKvEvents(c % kReplicas, events);
  }
  s.loads.resize(kReplicas);
  for (auto& l : s.loads) {
    l.running = static_cast<std::int32_t>(rng.Uniform(64));
    l.waiting = static_cast<std::int32_t>(rng.Uniform(8));
    l.queued_prefill_tokens = static_cast<std::int64_t>(rng.Uniform(20000));
    l.context_tokens = static_cast<std::int64_t>(rng.Uniform(200000));
    l.kv_utilisation = rng.Real();
  }
  return s;
}

void BM_Route(benchmark::State& state, const char* policy) {
  auto p = MakeRoutingPolicy(policy);
  Router router(std::move(*p), kReplicas, 16, EngineProfile{}, RoutingConfig{});
  Setup s = MakeSetup(&router);
  Rng rng(11);
  std::vector<std::vector<BlockHash>> prompts(4096);
  for (auto& prompt : prompts) {
    const auto& chain = s.chains[rng.Uniform(kChains)];
    const auto shared = static_cast<std::size_t>(rng.Uniform(49));
    prompt.assign(chain.begin(), chain.begin() + static_cast<std::ptrdiff_t>(shared));
    while (prompt.size() < 64) prompt.push_back(rng.Next());
  }
  std::size_t i = 0;
  for (auto _ : state) {
    const auto& prompt = prompts[i++ % prompts.size()];
    benchmark::DoNotOptimize(router.Route({prompt, 1024, 128}, s.loads));
  }
  state.counters["index_blocks"] = static_cast<double>(router.index().distinct_blocks());
}

BENCHMARK_CAPTURE(BM_Route, tessera, "tessera")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Route, prefix, "prefix")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Route, weighted, "weighted")->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tessera::serve

BENCHMARK_MAIN();
