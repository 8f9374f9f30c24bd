// Test helper: a real etcd cluster (Debian's etcd-server 3.4) of N members on loopback, each on
// free ports with its data in a temporary directory, every member a child that dies with the
// test. Members can be killed and started again (on the same ports and data).
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <string>
#include <vector>

#include "server/process_harness.h"

namespace tessera::testing {

// A port free at the time of asking (bound to 127.0.0.1:0, then closed).
inline int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

inline bool HaveEtcd() { return ::access("/usr/bin/etcd", X_OK) == 0; }

class EtcdCluster {
 public:
  EtcdCluster(const std::string& dir, int members) : dir_(dir) {
    for (int i = 0; i < members; ++i) {
      client_ports_.push_back(FreePort());
      peer_ports_.push_back(FreePort());
    }
    for (int i = 0; i < members; ++i) {
      initial_ += (i ? "," : "") + Name(i) + "=http://127.0.0.1:" + std::to_string(peer_ports_[i]);
    }
    pids_.assign(static_cast<std::size_t>(members), -1);
    for (int i = 0; i < members; ++i) Start(i);
  }
  ~EtcdCluster() {
    for (std::size_t i = 0; i < pids_.size(); ++i) Kill(static_cast<int>(i));
  }

  void Start(int i) {
    const std::string client = "http://127.0.0.1:" + std::to_string(client_ports_[i]);
    const std::string peer = "http://127.0.0.1:" + std::to_string(peer_ports_[i]);
    pids_[i] = Spawn({"/usr/bin/etcd",
                      "--name",
                      Name(i),
                      "--data-dir",
                      dir_ + "/" + Name(i),
                      "--listen-client-urls",
                      client,
                      "--advertise-client-urls",
                      client,
                      "--listen-peer-urls",
                      peer,
                      "--initial-advertise-peer-urls",
                      peer,
                      "--initial-cluster",
                      initial_,
                      "--initial-cluster-state",
                      "new",
                      "--initial-cluster-token",
                      "tessera-test",
                      "--heartbeat-interval",
                      "50",
                      "--election-timeout",
                      "500",
                      "--max-txn-ops",
                      "10000",
                      "--max-request-bytes",
                      "10485760",
                      "--logger",
                      "zap",
                      "--log-outputs",
                      "stderr"},
                     dir_ + "/" + Name(i) + ".log");
  }
  void Kill(int i) {
    if (pids_[i] > 0) Stop(pids_[i], SIGKILL);
    pids_[i] = -1;
  }
  // Waits until every running member answers with a leader.
  bool WaitHealthy(double seconds = 15) {
    return WaitFor(
        [&] {
          for (std::size_t i = 0; i < pids_.size(); ++i) {
            if (pids_[i] <= 0) continue;
            httplib::Client c("127.0.0.1", client_ports_[i]);
            c.set_connection_timeout(0, 200'000);
            c.set_read_timeout(1, 0);
            auto r = c.Get("/health");
            if (!r || r->status != 200 || r->body.find("true") == std::string::npos) return false;
          }
          return true;
        },
        seconds);
  }
  std::vector<std::string> Endpoints() const {
    std::vector<std::string> out;
    for (int p : client_ports_) out.push_back("http://127.0.0.1:" + std::to_string(p));
    return out;
  }
  std::string EndpointList() const {
    std::string s;
    for (const auto& e : Endpoints()) s += (s.empty() ? "" : ",") + e;
    return s;
  }

 private:
  static std::string Name(int i) { return "m" + std::to_string(i); }
  std::string dir_;
  std::string initial_;
  std::vector<int> client_ports_, peer_ports_;
  std::vector<pid_t> pids_;
};

}  // namespace tessera::testing
