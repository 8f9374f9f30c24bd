#include "gateway/service_routes.h"

#include <algorithm>

namespace tessera::gateway {

namespace {

constexpr int kSlotGranule = 64;  // the block index's holder bitsets are 64 replicas wide

int CapacityFor(std::size_t replicas) {
  const int n = std::max<int>(1, static_cast<int>(replicas));
  return (n + kSlotGranule - 1) / kSlotGranule * kSlotGranule;
}

// Engines without KV events: forget each replica's least recently routed blocks beyond what
// its cache could hold.
std::int64_t IndexCapacity(const EngineProfile& engine, int block_tokens) {
  return serve::IndexCapacityFor(engine, block_tokens);
}

}  // namespace

serve::RoutingConfig RoutingConfigOf(const ServiceConfig& config) {
  serve::RoutingConfig rc;
  if (config.slo_ttft_ms > 0) {
    rc.slo_ttft_ms = config.slo_ttft_ms;
  } else {
    rc.reject_factor = 0;
  }
  return rc;
}

Result<std::unique_ptr<ServiceRoutes>> ServiceRoutes::Make(const ServiceConfig& config,
                                                           const EngineProfile& engine) {
  auto policy = serve::MakeRoutingPolicy(config.policy);
  if (!policy) return std::unexpected(policy.error());
  const int capacity = CapacityFor(config.backends.size());
  auto router = std::make_unique<serve::Router>(std::move(*policy), capacity, config.block_tokens,
                                                engine, RoutingConfigOf(config),
                                                IndexCapacity(engine, config.block_tokens));
  std::unique_ptr<ServiceRoutes> out(
      new ServiceRoutes(config, engine, std::move(router), capacity));
  out->Update(config);
  return out;
}

ServiceRoutes::ServiceRoutes(ServiceConfig config, EngineProfile engine,
                             std::unique_ptr<serve::Router> router, int capacity)
    : config_(std::move(config)),
      engine_(std::move(engine)),
      router_(std::move(router)),
      slots_(static_cast<std::size_t>(capacity)),
      routed_(capacity),
      loads_(static_cast<std::size_t>(capacity)) {}

int ServiceRoutes::SlotOfLocked(const std::string& url) const {
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].present && slots_[i].url == url) return static_cast<int>(i);
  }
  return -1;
}

void ServiceRoutes::RebuildRouterLocked(int capacity) {
  auto policy = serve::MakeRoutingPolicy(config_.policy);
  if (!policy) return;  // Update checked the name before
  router_ = std::make_unique<serve::Router>(std::move(*policy), capacity, config_.block_tokens,
                                            engine_, RoutingConfigOf(config_),
                                            IndexCapacity(engine_, config_.block_tokens));
  slots_.resize(static_cast<std::size_t>(capacity));
  routed_.Grow(capacity);
  loads_.resize(static_cast<std::size_t>(capacity));
}

void ServiceRoutes::Update(const ServiceConfig& config) {
  std::lock_guard lock(mu_);
  const bool settings_changed =
      config.policy != config_.policy || config.block_tokens != config_.block_tokens ||
      config.slo_ttft_ms != config_.slo_ttft_ms || config.slo_tbt_ms != config_.slo_tbt_ms;
  const bool policy_ok = serve::MakeRoutingPolicy(config.policy).has_value();
  ServiceConfig next = config;
  if (!policy_ok) next.policy = config_.policy;  // keep routing with the last good policy
  config_ = next;
  for (Slot& s : slots_) {
    if (s.present &&
        std::find(config.backends.begin(), config.backends.end(), s.url) == config.backends.end()) {
      s.present = false;
      s.healthy = false;
    }
  }
  const int needed = CapacityFor(config.backends.size());
  if ((settings_changed && policy_ok) || needed > static_cast<int>(slots_.size())) {
    RebuildRouterLocked(std::max(needed, static_cast<int>(slots_.size())));
  }
  for (const std::string& url : config.backends) {
    if (SlotOfLocked(url) >= 0) continue;
    // A free slot, preferring the one this URL had before (its index may still be right).
    int free = -1;
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].present) continue;
      if (slots_[i].url == url) {
        free = static_cast<int>(i);
        break;
      }
      if (free < 0 && routed_.in_flight(static_cast<int>(i)) == 0) free = static_cast<int>(i);
    }
    if (free < 0) continue;  // every slot busy draining; the next update places it
    Slot& s = slots_[static_cast<std::size_t>(free)];
    if (s.url != url) {
      router_->ReplicaReplaced(free);
      routed_.Clear(free);
    }
    s = Slot{url, true, config.assume_ready};
  }
}

ServiceRoutes::Pick ServiceRoutes::Route(std::span<const serve::BlockHash> blocks,
                                         std::int64_t prompt_tokens, std::int64_t output_tokens,
                                         std::span<const int> exclude) {
  std::lock_guard lock(mu_);
  routed_.Fill(loads_);
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    loads_[i].ready =
        s.present && s.healthy &&
        std::find(exclude.begin(), exclude.end(), static_cast<int>(i)) == exclude.end();
  }
  serve::RouteRequest request{blocks, prompt_tokens, output_tokens};
  const serve::RouteDecision d = router_->Route(request, loads_);
  Pick pick;
  pick.reason = d.reason;
  pick.predicted_ttft_ms = d.predicted_ttft_ms;
  pick.prompt_tokens = prompt_tokens;
  pick.output_tokens = output_tokens;
  if (d.replica < 0) return pick;
  pick.slot = d.replica;
  pick.url = slots_[static_cast<std::size_t>(d.replica)].url;
  const auto match = router_->last_match();
  pick.matched_tokens = std::min<std::int64_t>(
      prompt_tokens,
      static_cast<std::int64_t>(match[static_cast<std::size_t>(d.replica)]) * config_.block_tokens);
  routed_.Routed(d.replica, prompt_tokens, pick.matched_tokens);
  return pick;
}

serve::RoutedLoad::Ticket ServiceRoutes::TicketOf(const Pick& pick) {
  return {pick.slot, pick.prompt_tokens, pick.prompt_tokens - pick.matched_tokens};
}

void ServiceRoutes::FirstToken(const Pick& pick) {
  std::lock_guard lock(mu_);
  if (pick.slot < 0 || slots_[static_cast<std::size_t>(pick.slot)].url != pick.url) return;
  routed_.FirstToken(TicketOf(pick));
}

void ServiceRoutes::Finished(const Pick& pick, bool first_token) {
  std::lock_guard lock(mu_);
  if (pick.slot < 0 || slots_[static_cast<std::size_t>(pick.slot)].url != pick.url) return;
  routed_.Finished(TicketOf(pick), first_token);
}

void ServiceRoutes::MarkDead(const std::string& url, const std::string& reason) {
  std::lock_guard lock(mu_);
  for (Slot& s : slots_) {
    if (s.present && s.url == url) {
      s.healthy = false;
      s.last_error = reason;
    }
  }
}

void ServiceRoutes::MarkHealthy(const std::string& url) {
  std::lock_guard lock(mu_);
  for (Slot& s : slots_) {
    if (s.present && s.url == url) {
      s.healthy = true;
      s.failed_probes = 0;
    }
  }
}

void ServiceRoutes::ProbeFailed(const std::string& url, const std::string& reason) {
  std::lock_guard lock(mu_);
  for (Slot& s : slots_) {
    if (s.present && s.url == url && ++s.failed_probes >= kProbeFailuresToDead) {
      s.healthy = false;
      s.last_error = reason;
    }
  }
}

std::int64_t ServiceRoutes::ApplyKvEvents(const std::string& url,
                                          std::span<const serve::KvEvent> events) {
  std::lock_guard lock(mu_);
  const int slot = SlotOfLocked(url);
  return slot >= 0 ? router_->ApplyKvEvents(slot, events) : 0;
}

std::int64_t ServiceRoutes::index_capacity() const {
  std::lock_guard lock(mu_);
  return IndexCapacity(engine_, config_.block_tokens);
}

std::vector<ReplicaView> ServiceRoutes::Replicas() const {
  std::lock_guard lock(mu_);
  std::vector<ReplicaView> out;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (!s.present) continue;
    const int slot = static_cast<int>(i);
    out.push_back({slot, s.url, s.healthy, routed_.in_flight(slot), s.last_error,
                   routed_.waiting(slot), router_->index().blocks_on(slot)});
  }
  return out;
}

bool ServiceRoutes::HasReadyReplica() const {
  std::lock_guard lock(mu_);
  for (const Slot& s : slots_)
    if (s.present && s.healthy) return true;
  return false;
}

ServiceConfig ServiceRoutes::config() const {
  std::lock_guard lock(mu_);
  return config_;
}

std::string ServiceRoutes::policy_name() const {
  std::lock_guard lock(mu_);
  return config_.policy;
}

int ServiceRoutes::block_tokens() const {
  std::lock_guard lock(mu_);
  return config_.block_tokens;
}

}  // namespace tessera::gateway
