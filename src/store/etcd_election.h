// Leader election among controllers through an etcd lease. Each controller process holds one
// lease (a short TTL, 2 s by default), renewed by a thread a few times per TTL, and registers
// itself under <prefix>controllers/ with that lease ({url, pid}); the leader is the controller
// whose lease holds <prefix>leader, put only while the key does not exist. A killed leader's
// lease expires after the TTL, etcd deletes its keys, and a standby's next try wins.
//
// The leader stays leader while its renewals succeed. It counts its term as over when etcd
// says the lease expired, or when no renewal succeeded for a whole TTL (etcd may have expired
// it meanwhile): `on_lost` is called once. Writes are fenced on the lease (EtcdStore), so a
// leader that has not noticed yet commits nothing either.
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "store/etcd_client.h"

namespace tessera {

class LeaderElection {
 public:
  struct Options {
    std::vector<std::string> endpoints;
    EtcdTls tls;
    std::string prefix = "/tessera/";
    int ttl_seconds = 2;
    std::string url;  // where this controller serves
    int pid = 0;
  };

  // Grants the lease and registers; fails when etcd cannot be reached.
  static Result<std::unique_ptr<LeaderElection>> Start(Options options);
  // Stops renewing and revokes the lease, so that a standby takes over at once.
  ~LeaderElection();

  // One attempt to lead: true when this controller is (or already was) the leader.
  Result<bool> TryLead();
  // The leader's {url, pid}; null when there is none.
  Result<nlohmann::json> Leader();
  // Every registered controller: [{url, pid, leader}], ordered by url.
  Result<nlohmann::json> Controllers();

  // Called once, from the renewal thread, when a term that was won is over. Set before TryLead.
  void set_on_lost(std::function<void(const std::string&)> on_lost);
  bool leading() const { return leading_.load(); }
  std::int64_t lease() const { return lease_.load(); }
  std::string leader_key() const { return options_.prefix + "leader"; }
  // Why etcd last failed (empty after a success): a standby's healthz says it.
  std::string problem() const;

 private:
  explicit LeaderElection(Options options);
  Status Register();
  void RenewLoop();

  Options options_;
  EtcdClient client_;        // campaigns and reads
  EtcdClient renew_client_;  // renewals, never behind a slow read
  std::atomic<std::int64_t> lease_{0};
  std::atomic<bool> leading_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                                // under mu_
  std::string problem_;                              // under mu_
  std::function<void(const std::string&)> on_lost_;  // under mu_
  std::thread renewer_;
};

}  // namespace tessera
