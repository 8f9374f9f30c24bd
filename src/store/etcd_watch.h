// A watch on one etcd key through the v3 JSON gateway's streaming /v3/watch: a thread holds
// one stream open to a member and calls `on_change` for every batch of events on the key (a
// put, a delete, an expiry of its lease). Standby controllers watch the leader key so that
// they campaign the moment it goes, instead of polling it.
//
// A stream that breaks (its member died, hung past the read timeout, or etcd cancelled the
// watch) is opened again on the next member; `on_change` is also called on every (re)open,
// since a change may have been missed while no stream was open. The caller keeps a slow
// fallback poll: a watch speeds things up, it is never the only way to learn of a change.
//
// Thread-safety: the constructor starts the thread, the destructor stops and joins it.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "store/etcd_client.h"

namespace httplib {
class Client;
}

namespace tessera {

// The events of one message of the gateway's watch stream ({"result": {"events": [...]}}):
// how many, or -1 when the message says the watch was cancelled or is not a watch response.
int WatchEventCount(std::string_view message);

class EtcdKeyWatch {
 public:
  // `endpoints`: http(s)://HOST:PORT of each member, reached with `tls`. `idle_timeout_ms`: a
  // stream silent this long is opened again (etcd sends nothing while the key does not change).
  EtcdKeyWatch(std::vector<std::string> endpoints, EtcdTls tls, std::string key,
               std::function<void()> on_change, int idle_timeout_ms = 5000);
  ~EtcdKeyWatch();
  EtcdKeyWatch(const EtcdKeyWatch&) = delete;
  EtcdKeyWatch& operator=(const EtcdKeyWatch&) = delete;

  // Streams opened so far (for tests and logs).
  int streams_opened() const { return opened_.load(); }

 private:
  void Loop();
  // One stream on member `i`, until it breaks or the watch stops.
  void Stream(std::size_t i);

  const std::vector<std::string> endpoints_;
  const EtcdTls tls_;
  const std::string key_;
  const std::function<void()> on_change_;
  const int idle_timeout_ms_;
  std::atomic<bool> stop_{false};
  std::atomic<int> opened_{0};
  std::mutex client_mu_;
  httplib::Client* client_ = nullptr;  // under client_mu_: the open stream's, to stop it
  std::thread thread_;
};

}  // namespace tessera
