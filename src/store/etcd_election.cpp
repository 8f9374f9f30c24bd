#include "store/etcd_election.h"

#include <chrono>

#include "store/record_json.h"

namespace tessera {

namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

}  // namespace

LeaderElection::LeaderElection(Options options)
    : options_(std::move(options)),
      client_(options_.endpoints, 1000, options_.tls),
      renew_client_(options_.endpoints, 500, options_.tls) {}

Result<std::unique_ptr<LeaderElection>> LeaderElection::Start(Options options) {
  if (options.endpoints.empty()) return InvalidArgument("--etcd-endpoints: give at least one URL");
  std::unique_ptr<LeaderElection> e(new LeaderElection(std::move(options)));
  if (auto s = e->Register(); !s) return std::unexpected(s.error());
  e->renewer_ = std::thread([p = e.get()] { p->RenewLoop(); });
  return e;
}

LeaderElection::~LeaderElection() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (renewer_.joinable()) renewer_.join();
  if (lease_.load() != 0) (void)client_.LeaseRevoke(lease_.load());
}

Status LeaderElection::Register() {
  auto lease = client_.LeaseGrant(options_.ttl_seconds);
  if (!lease) return std::unexpected(lease.error());
  const Json me = {{"url", options_.url}, {"pid", options_.pid}};
  const std::string key = options_.prefix + "controllers/" + std::to_string(*lease);
  if (auto s = client_.Put(key, RecordText(me), *lease); !s) return s;
  lease_.store(*lease);
  return {};
}

void LeaderElection::set_on_lost(std::function<void(const std::string&)> on_lost) {
  std::lock_guard lock(mu_);
  on_lost_ = std::move(on_lost);
}

std::string LeaderElection::problem() const {
  std::lock_guard lock(mu_);
  return problem_;
}

Result<bool> LeaderElection::TryLead() {
  if (leading_.load()) return true;
  const std::int64_t lease = lease_.load();
  if (lease == 0) return false;  // re-registering after an expiry
  const Json me = {{"url", options_.url}, {"pid", options_.pid}, {"lease", std::to_string(lease)}};
  auto r = client_.Txn(Json::array({EtcdMissing(leader_key())}),
                       Json::array({EtcdPut(leader_key(), RecordText(me), lease)}),
                       Json::array({EtcdRangeOp(leader_key())}));
  if (!r) {
    std::lock_guard lock(mu_);
    problem_ = r.error().message;
    return std::unexpected(r.error());
  }
  bool won = r->succeeded;
  if (!won) {
    // Ours already (a txn whose answer was lost, then sent again)?
    auto held = client_.Range(leader_key(), "");
    won = held && !held->empty() && held->front().lease == lease;
  }
  {
    std::lock_guard lock(mu_);
    problem_.clear();
  }
  if (won) leading_.store(true);
  return won;
}

Result<Json> LeaderElection::Leader() {
  auto kvs = client_.Range(leader_key(), "");
  if (!kvs) {
    std::lock_guard lock(mu_);
    problem_ = kvs.error().message;
    return std::unexpected(kvs.error());
  }
  if (kvs->empty()) return Json(nullptr);
  Json doc = Json::parse(kvs->front().value, nullptr, false);
  if (doc.is_discarded()) return IoError("etcd: the leader key holds a value that is not JSON");
  return doc;
}

Result<Json> LeaderElection::Controllers() {
  auto leader = Leader();
  if (!leader) return std::unexpected(leader.error());
  const std::string prefix = options_.prefix + "controllers/";
  auto kvs = client_.Range(prefix, PrefixEnd(prefix));
  if (!kvs) return std::unexpected(kvs.error());
  std::vector<Json> rows;
  for (const auto& kv : *kvs) {
    Json doc = Json::parse(kv.value, nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) continue;
    const std::string url = doc.value("url", "");
    rows.push_back({{"url", url},
                    {"pid", doc.value("pid", 0)},
                    {"leader", !leader->is_null() && leader->value("url", "") == url &&
                                   leader->value("lease", "") == std::to_string(kv.lease)}});
  }
  std::sort(rows.begin(), rows.end(), [](const Json& a, const Json& b) {
    return a["url"].get<std::string>() < b["url"].get<std::string>();
  });
  return Json(rows);
}

void LeaderElection::RenewLoop() {
  const auto period = std::chrono::milliseconds(options_.ttl_seconds * 1000 / 4);
  const auto ttl = std::chrono::seconds(options_.ttl_seconds);
  auto last_ok = Clock::now();
  while (true) {
    {
      std::unique_lock lock(mu_);
      if (cv_.wait_for(lock, period, [this] { return stop_; })) return;
    }
    std::string lost;
    const std::int64_t lease = lease_.load();
    auto left = lease == 0 ? Result<std::int64_t>(0) : renew_client_.LeaseKeepAlive(lease);
    if (left && *left > 0) {
      last_ok = Clock::now();
      std::lock_guard lock(mu_);
      problem_.clear();
      continue;
    }
    if (left) {
      // Expired: a leader's term is over; a standby registers again with a new lease.
      if (leading_.load()) {
        lost = "the leader's etcd lease " + std::to_string(lease) + " expired";
      } else if (auto s = Register(); !s) {
        lease_.store(0);
        std::lock_guard lock(mu_);
        problem_ = s.error().message;
      }
    } else {
      std::lock_guard lock(mu_);
      problem_ = left.error().message;
      if (leading_.load() && Clock::now() - last_ok >= ttl)
        lost = "no lease renewal for " + std::to_string(options_.ttl_seconds) +
               " s (etcd: " + problem_ + ")";
    }
    if (!lost.empty()) {
      leading_.store(false);
      std::function<void(const std::string&)> on_lost;
      {
        std::lock_guard lock(mu_);
        on_lost.swap(on_lost_);
      }
      if (on_lost) on_lost(lost);
    }
  }
}

}  // namespace tessera
