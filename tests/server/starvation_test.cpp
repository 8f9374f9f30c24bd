// ctest-labels: integration security
// A controller no client can starve (issue 18, part 6), on the real binaries over loopback:
// 140 half-sent requests while an agent pauses longer than the keep-alive timeout do not get
// its node declared lost; 200 long-polls do not delay a health check, and are all answered
// when an event arrives; a request whose headers never end is answered 408 at its deadline, a
// kept-alive connection idle past its timeout is closed;
// a long-poll without a valid token is answered 401 at once (never parked), and parked
// long-polls beyond --max-long-polls answer the oldest at once.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "server/live_harness.h"
#include "server/loopback_socket.h"

namespace tessera::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

int PortOf(const std::string& url) { return std::stoi(url.substr(url.rfind(':') + 1)); }

// A raw connection to 127.0.0.1:port with `text` sent; -1 on failure.
int ConnectAndSend(int port, const std::string& text) {
  const int fd = ConnectLoopback(port);
  if (fd < 0) return -1;
  if (!text.empty() && ::send(fd, text.data(), text.size(), MSG_NOSIGNAL) < 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// What arrives on `fd` within `ms` (until the peer closes or the time is up).
std::string ReadFor(int fd, int ms) {
  std::string out;
  const auto deadline = Clock::now() + std::chrono::milliseconds(ms);
  while (Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (::poll(&p, 1, static_cast<int>(std::max<long>(left, 1))) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.find("\r\n\r\n") != std::string::npos &&
        out.find("Content-Length") != std::string::npos) {
      const auto len_at = out.find("Content-Length: ") + 16;
      const auto len = std::stoul(out.substr(len_at, out.find("\r\n", len_at) - len_at));
      if (out.size() >= out.find("\r\n\r\n") + 4 + len) break;
    }
  }
  return out;
}

// Milliseconds a fresh connection's GET /v1/healthz takes; -1 when it got no 200 in `limit_s`.
long HealthzMs(const std::string& url, int limit_s) {
  httplib::Client client(url);
  client.set_connection_timeout(limit_s, 0);
  client.set_read_timeout(limit_s, 0);
  const auto start = Clock::now();
  auto r = client.Get("/v1/healthz");
  if (!r || r->status != 200) return -1;
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

// The `answers` responses that arrive in turn on `fd` within `ms`, or what came before the
// peer closed or the time was up.
std::string ReadAnswers(int fd, int answers, int ms) {
  std::string out;
  const auto complete = [&] {
    std::size_t at = 0;
    for (int i = 0; i < answers; ++i) {
      const auto end = out.find("\r\n\r\n", at);
      const auto len_at = out.find("Content-Length: ", at);
      if (end == std::string::npos || len_at == std::string::npos || len_at > end) return false;
      at = end + 4 + std::stoul(out.substr(len_at + 16, out.find("\r\n", len_at) - len_at - 16));
      if (out.size() < at) return false;
    }
    return true;
  };
  const auto deadline = Clock::now() + std::chrono::milliseconds(ms);
  while (Clock::now() < deadline && !complete()) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

// Milliseconds until the peer closes `fd` (reading and dropping what comes); -1 after `ms`.
long MsUntilClosed(int fd, int ms) {
  const auto start = Clock::now();
  while (Clock::now() - start < std::chrono::milliseconds(ms)) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    char buf[4096];
    if (::recv(fd, buf, sizeof buf, 0) <= 0) {
      return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    }
  }
  return -1;
}

struct Sockets {
  std::vector<int> fds;
  ~Sockets() {
    for (int fd : fds) ::close(fd);
  }
};

TEST(StarvationTest, HalfSentRequestsDoNotGetAPausedAgentDeclaredLost) {
  Watchdog watchdog(60s, "starvation test");
  // The agent pauses 6 s: longer than the keep-alive timeout (5 s), so it must reconnect, and
  // shorter than the heartbeat timeout (8 s), so its node must stay Ready. The half-sent
  // requests outlive the pause: the default header deadline is 10 s.
  LiveCluster c({.agents = 1, .heartbeat_timeout_s = 8, .heartbeat_interval_s = 0.25});
  ASSERT_TRUE(c.WaitForReadyNodes(1)) << c.Logs();
  ASSERT_EQ(c.Submit(TrainingSpec("steady", 1, 1, "sleep 60")).status, 201);
  ASSERT_TRUE(c.WaitForPhase("default", "steady", "Running")) << c.Logs();

  Sockets slow;
  for (int i = 0; i < 140; ++i) {
    const int fd = ConnectAndSend(PortOf(c.url()), "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nX-Slow: ");
    ASSERT_GE(fd, 0) << "connection " << i;
    slow.fds.push_back(fd);
  }
  const long during = HealthzMs(c.url(), 3);
  EXPECT_GE(during, 0) << "healthz not answered within 3 s under 140 half-sent requests";
  EXPECT_LT(during, 1000);

  const pid_t agent = c.agent_pid(0);
  ASSERT_EQ(::kill(agent, SIGSTOP), 0);
  std::this_thread::sleep_for(6s);
  ::kill(agent, SIGCONT);
  std::this_thread::sleep_for(4s);  // past the 8 s timeout, had the agent not got through

  const Json nodes = c.Nodes();
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0]["status"], "Ready") << nodes.dump(2);
  const Json job = c.Job("default", "steady");
  EXPECT_EQ(job["phase"], "Running");
  EXPECT_EQ(job["attempt"], 1) << "the gang was restarted: " << job.dump(2);
  const Json events = c.Get("/v1/events?since=0&limit=10000").json["events"];
  for (const auto& e : events) EXPECT_NE(e["type"], "NodeLost") << e.dump();
}

TEST(StarvationTest, LongPollsDoNotDelayAHealthCheckAndAreAnsweredOnAnEvent) {
  Watchdog watchdog(60s, "long-poll test");
  LiveCluster c({.agents = 1});
  ASSERT_TRUE(c.WaitForReadyNodes(1)) << c.Logs();
  const std::int64_t last = c.Get("/v1/status").json["lastEventSeq"].get<std::int64_t>();
  const std::string poll =
      "GET /v1/events?since=" + std::to_string(last) + "&wait=20 HTTP/1.1\r\nHost: x\r\n\r\n";
  Sockets polls;
  for (int i = 0; i < 200; ++i) {
    const int fd = ConnectAndSend(PortOf(c.url()), poll);
    ASSERT_GE(fd, 0) << "long-poll " << i;
    polls.fds.push_back(fd);
  }
  std::this_thread::sleep_for(300ms);  // every long-poll has reached the controller
  const long ms = HealthzMs(c.url(), 5);
  EXPECT_GE(ms, 0) << "healthz not answered within 5 s behind 200 long-polls";
  EXPECT_LT(ms, 1000);
  // An event answers every one of them, at once rather than at the end of its wait.
  const auto submitted = Clock::now();
  ASSERT_EQ(c.Submit(TrainingSpec("wake", 1, 1, "sleep 1")).status, 201);
  int answered = 0;
  for (int fd : polls.fds) {
    const std::string reply = ReadFor(fd, 5000);
    answered +=
        reply.starts_with("HTTP/1.1 200") && reply.find("JobSubmitted") != std::string::npos;
  }
  EXPECT_EQ(answered, 200);
  EXPECT_LT(Clock::now() - submitted, 8s);
}

TEST(StarvationTest, UnauthenticatedLongPollsAreRefusedAtOnceAndParkedOnesAreCapped) {
  Watchdog watchdog(40s, "parked long-poll test");
  LiveCluster c({.agents = 1, .controller_args = {"--max-long-polls", "8"}, .auth = true});
  ASSERT_TRUE(c.WaitForReadyNodes(1)) << c.Logs();
  const std::int64_t last = c.Get("/v1/status").json["lastEventSeq"].get<std::int64_t>();
  const std::string target =
      "GET /v1/events?since=" + std::to_string(last) + "&wait=20 HTTP/1.1\r\nHost: x\r\n";
  // 60 without a token and 60 with a forged one: each is answered 401 at once.
  const auto start = Clock::now();
  Sockets anonymous;
  for (int i = 0; i < 120; ++i) {
    const std::string auth = i % 2 == 0 ? "" : "Authorization: Bearer forged-token\r\n";
    anonymous.fds.push_back(ConnectAndSend(PortOf(c.url()), target + auth + "\r\n"));
    ASSERT_GE(anonymous.fds.back(), 0);
  }
  int refused = 0;
  for (int fd : anonymous.fds) refused += ReadFor(fd, 3000).starts_with("HTTP/1.1 401");
  EXPECT_EQ(refused, 120);
  EXPECT_LT(Clock::now() - start, 3s) << "unauthenticated long-polls were parked";
  // 20 authenticated ones with room for 8: the 12 oldest are answered (no events yet) at once,
  // the 8 newest stay parked until an event.
  const std::string mine =
      target + "Authorization: Bearer " + LiveCluster::kAdminToken + "\r\n\r\n";
  Sockets polls;
  for (int i = 0; i < 20; ++i) {
    polls.fds.push_back(ConnectAndSend(PortOf(c.url()), mine));
    ASSERT_GE(polls.fds.back(), 0);
    std::this_thread::sleep_for(10ms);  // arrival order is the order of age
  }
  int early = 0;
  for (std::size_t i = 0; i < 12; ++i) {
    const std::string reply = ReadFor(polls.fds[i], 3000);
    early += reply.starts_with("HTTP/1.1 200") && reply.find("\"events\"") != std::string::npos;
  }
  EXPECT_EQ(early, 12);
  for (std::size_t i = 12; i < 20; ++i)
    EXPECT_EQ(ReadFor(polls.fds[i], 50), "") << "long-poll " << i << " was not parked";
  ASSERT_EQ(c.Submit(TrainingSpec("wake", 1, 1, "sleep 1")).status, 201);
  int woken = 0;
  for (std::size_t i = 12; i < 20; ++i)
    woken += ReadFor(polls.fds[i], 5000).find("JobSubmitted") != std::string::npos;
  EXPECT_EQ(woken, 8);
}

TEST(StarvationTest, HeadersThatNeverEndAreAnswered408AtTheirDeadline) {
  Watchdog watchdog(30s, "deadline test");
  LiveCluster c({.agents = 1,
                 .controller_args = {"--header-timeout", "1", "--body-timeout", "1",
                                     "--idle-timeout", "0.5"}});
  ASSERT_TRUE(c.WaitForReadyNodes(1)) << c.Logs();
  const auto start = Clock::now();
  Sockets s;
  s.fds.push_back(ConnectAndSend(PortOf(c.url()), "GET /v1/healthz HTTP/1.1\r\nHost: x\r\n"));
  s.fds.push_back(ConnectAndSend(
      PortOf(c.url()), "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"));
  const std::string head = ReadFor(s.fds[0], 4000);
  const std::string body = ReadFor(s.fds[1], 4000);
  EXPECT_TRUE(head.starts_with("HTTP/1.1 408")) << head;
  EXPECT_NE(head.find("request headers not received within 1000 ms"), std::string::npos) << head;
  EXPECT_TRUE(body.starts_with("HTTP/1.1 408")) << body;
  EXPECT_NE(body.find("request body not received within 1000 ms"), std::string::npos) << body;
  EXPECT_LT(Clock::now() - start, 4s);
  // A body announced larger than the limit is refused before it is sent.
  const int big = ConnectAndSend(
      PortOf(c.url()), "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 9000000\r\n\r\n");
  s.fds.push_back(big);
  EXPECT_TRUE(ReadFor(big, 3000).starts_with("HTTP/1.1 413"));
  EXPECT_GE(HealthzMs(c.url(), 2), 0);
  // A kept-alive connection: two requests sent at once are answered in turn, a later one too
  // (a worker that answered watches the connection again itself), and once idle past
  // --idle-timeout it is closed, though the event loop was not woken when it went idle.
  const std::string get = "GET /v1/healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  const int kept = ConnectAndSend(PortOf(c.url()), get + get);
  s.fds.push_back(kept);
  const std::string two = ReadAnswers(kept, 2, 3000);
  ASSERT_TRUE(two.starts_with("HTTP/1.1 200")) << two;
  EXPECT_NE(two.find("HTTP/1.1 200", 1), std::string::npos) << two;
  ASSERT_EQ(::send(kept, get.data(), get.size(), MSG_NOSIGNAL), static_cast<ssize_t>(get.size()));
  EXPECT_TRUE(ReadAnswers(kept, 1, 3000).starts_with("HTTP/1.1 200"));
  const long closed_ms = MsUntilClosed(kept, 3000);
  EXPECT_GE(closed_ms, 300);
  EXPECT_LE(closed_ms, 1500);
}

}  // namespace
}  // namespace tessera::testing
