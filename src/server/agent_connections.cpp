#include "server/agent_connections.h"

#include <httplib.h>

namespace tessera {

AgentConnections::~AgentConnections() = default;

std::unique_ptr<httplib::Client> AgentConnections::Borrow(const std::string& url,
                                                          int read_timeout_s) {
  std::unique_ptr<httplib::Client> client;
  {
    std::lock_guard lock(mu_);
    auto it = idle_.find(url);
    if (it != idle_.end() && !it->second.empty()) {
      client = std::move(it->second.back());
      it->second.pop_back();
    } else {
      ++made_;
    }
  }
  if (!client) {
    client = std::make_unique<httplib::Client>(AgentClient(url, *tls_, read_timeout_s));
    client->set_keep_alive(true);
  }
  client->set_read_timeout(read_timeout_s, 0);
  return client;
}

void AgentConnections::GiveBack(const std::string& url, std::unique_ptr<httplib::Client> client) {
  if (!client) return;
  std::unique_ptr<httplib::Client> closing;  // closed outside the lock
  std::lock_guard lock(mu_);
  auto& idle = idle_[url];
  if (idle.size() >= kIdlePerAgent) {
    closing = std::move(client);
    return;
  }
  idle.push_back(std::move(client));
}

std::int64_t AgentConnections::clients_made() const {
  std::lock_guard lock(mu_);
  return made_;
}

}  // namespace tessera
