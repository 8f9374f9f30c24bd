// The controller's side of `tessera exec` beyond the routes: open sessions are counted per user
// and in all, refused with the reason beyond either cap, and free their place when removed, when
// their reservation is given up, or when idle (exec_session_table.h); requests to an agent reuse
// kept-alive connections (agent_connections.h), counted here by the connections a local server
// accepts.
#include <gtest/gtest.h>
#include <httplib.h>

#include <mutex>
#include <set>
#include <thread>

#include "server/agent_connections.h"
#include "server/exec_session_table.h"

namespace tessera {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

ExecSessionEntry EntryOf(const std::string& user, Clock::time_point t) {
  return {user, "default/dev", "http://127.0.0.1:1", 7, t};
}

TEST(ExecSessionTableTest, CapsPerUserAndInAllWithTheReason) {
  ExecSessionTable table;
  table.SetLimits({.max_total = 3, .max_per_user = 2, .idle = 60s});
  const auto t = Clock::now();
  EXPECT_FALSE(table.Reserve("alice", t));
  table.Add("a1", EntryOf("alice", t));
  EXPECT_FALSE(table.Reserve("alice", t));
  table.Add("a2", EntryOf("alice", t));
  auto third = table.Reserve("alice", t);
  ASSERT_TRUE(third);
  EXPECT_NE(third->find("user alice has 2 exec sessions open"), std::string::npos) << *third;
  EXPECT_NE(third->find("--max-exec-sessions-per-user 2"), std::string::npos) << *third;
  EXPECT_FALSE(table.Reserve("bob", t));  // reserved: counts before the agent answers
  auto full = table.Reserve("carol", t);
  ASSERT_TRUE(full);
  EXPECT_NE(full->find("--max-exec-sessions 3"), std::string::npos) << *full;
  table.Unreserve("bob");  // the agent refused bob's
  EXPECT_FALSE(table.Reserve("carol", t));
  EXPECT_EQ(table.open_total(), 3);
  EXPECT_EQ(table.open("alice"), 2);
  table.Remove("a1");
  EXPECT_EQ(table.open("alice"), 1);
  EXPECT_FALSE(table.Reserve("alice", t));
}

TEST(ExecSessionTableTest, UseChecksTheOwnerAndIdleSessionsExpire) {
  ExecSessionTable table;
  table.SetLimits({.max_total = 1, .max_per_user = 1, .idle = 60s});
  const auto t = Clock::now();
  ASSERT_FALSE(table.Reserve("alice", t));
  table.Add("a1", EntryOf("alice", t));
  EXPECT_FALSE(table.Use("a1", "mallory", "default/dev", t));
  EXPECT_FALSE(table.Use("a1", "alice", "other/job", t));
  auto used = table.Use("a1", "alice", "default/dev", t + 50s);
  ASSERT_TRUE(used);
  EXPECT_EQ(used->task_id, 7);
  EXPECT_TRUE(table.Reserve("bob", t + 100s));   // used at 50 s: not idle yet
  EXPECT_FALSE(table.Reserve("bob", t + 111s));  // idle for 61 s: dropped
  EXPECT_FALSE(table.Use("a1", "alice", "default/dev", t + 111s));
  EXPECT_EQ(table.open("alice"), 0);
}

TEST(AgentConnectionsTest, RequestsReuseKeptAliveConnections) {
  httplib::Server agent;
  std::mutex mu;
  std::set<int> client_ports;  // one per connection
  agent.set_keep_alive_max_count(1000);
  agent.set_keep_alive_timeout(1);
  agent.set_tcp_nodelay(true);  // as the agent's endpoint: no 40 ms Nagle wait per answer
  agent.Get("/v1/healthz", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu);
    client_ports.insert(req.remote_port);
    res.set_content("{}", "application/json");
  });
  auto connections = [&] {
    std::lock_guard lock(mu);
    return client_ports.size();
  };
  const int port = agent.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread serving([&] { agent.listen_after_bind(); });
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  AgentClientTls tls;
  auto pool_owner = std::make_unique<AgentConnections>(&tls);
  AgentConnections& pool = *pool_owner;
  for (int i = 0; i < 20; ++i) {
    BorrowedAgentClient client(pool, url, 5);
    auto r = client->Get("/v1/healthz");
    ASSERT_TRUE(r) << httplib::to_string(r.error());
    EXPECT_EQ(r->status, 200);
  }
  EXPECT_EQ(connections(), 1u);
  EXPECT_EQ(pool.clients_made(), 1);
  {
    // Two at once: a second connection, and both are kept.
    BorrowedAgentClient a(pool, url, 5), b(pool, url, 5);
    ASSERT_TRUE(a->Get("/v1/healthz"));
    ASSERT_TRUE(b->Get("/v1/healthz"));
  }
  EXPECT_EQ(connections(), 2u);
  EXPECT_EQ(pool.clients_made(), 2);
  pool_owner.reset();  // closes the kept connections, so the server stops at once
  agent.stop();
  serving.join();
}

}  // namespace
}  // namespace tessera
