// Kept-alive connections from the controller to the agents' endpoints (agent_client.h), so that
// a `tessera exec` session, which reads its output again and again, does not make a TCP and TLS
// handshake per read. A caller borrows a client for one request and hands it back; at most
// kIdlePerAgent idle clients are kept per agent URL (an idle kept-alive connection holds one of
// the agent's endpoint threads until the agent's keep-alive timeout closes it), so what is kept
// is bounded by the agents and not by the sessions.
//
// Thread-safety: thread-safe; a borrowed client is the borrower's alone until handed back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server/agent_client.h"

namespace httplib {
class Client;
}

namespace tessera {

class AgentConnections {
 public:
  static constexpr std::size_t kIdlePerAgent = 4;

  // `tls` is read when a client is made; it must outlive this pool.
  explicit AgentConnections(const AgentClientTls* tls) : tls_(tls) {}
  ~AgentConnections();

  // A client of `url` (an idle one when there is one) with its read timeout set.
  std::unique_ptr<httplib::Client> Borrow(const std::string& url, int read_timeout_s);
  // Back into the idle ones, unless `url` has kIdlePerAgent already (then it is closed).
  void GiveBack(const std::string& url, std::unique_ptr<httplib::Client> client);

  // Clients made so far (each one a new connection at its first request), for tests.
  std::int64_t clients_made() const;

 private:
  const AgentClientTls* tls_;
  mutable std::mutex mu_;
  std::map<std::string, std::vector<std::unique_ptr<httplib::Client>>> idle_;
  std::int64_t made_ = 0;
};

// Borrows a client for the scope of one request and gives it back after.
class BorrowedAgentClient {
 public:
  BorrowedAgentClient(AgentConnections& pool, std::string url, int read_timeout_s)
      : pool_(pool), url_(std::move(url)), client_(pool.Borrow(url_, read_timeout_s)) {}
  ~BorrowedAgentClient() { pool_.GiveBack(url_, std::move(client_)); }
  BorrowedAgentClient(const BorrowedAgentClient&) = delete;
  BorrowedAgentClient& operator=(const BorrowedAgentClient&) = delete;
  httplib::Client& operator*() { return *client_; }
  httplib::Client* operator->() { return client_.get(); }

 private:
  AgentConnections& pool_;
  std::string url_;
  std::unique_ptr<httplib::Client> client_;
};

}  // namespace tessera
