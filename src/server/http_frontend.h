// The controller's HTTP front end: its own accept loop in front of httplib's router, so that no
// client can starve the others (issue 18, part 6).
//
// httplib's server reads each request in a worker thread of one fixed pool: 140 connections
// sending their headers slowly held every worker, and 200 long-polls did too. Here one event
// thread (epoll) accepts connections and reads every request, head and body, into memory
// within deadlines; only a complete request reaches a worker. Workers come in three pools, one
// per class of route (request_head.h): agents (registration, heartbeats, task reports), long-
// polls (/v1/events) and users, so user load cannot delay a heartbeat into NodeLost, and long-
// polls wait on threads of their own, never on the users' or the agents'. Each pool has a
// bounded queue; a request finding it full is answered 503 at once.
//
// Limits: a connection whose headers take longer than header_timeout or whose body takes
// longer than body_timeout is answered 408 and closed; an idle keep-alive connection is closed
// after idle_timeout; at max_connections a new connection evicts the longest-idle one, or else
// the one slowest to send its request (a request already with a worker is never evicted).
// Bodies larger than max_body_bytes are refused (413) before they are read; chunked request
// bodies are refused (411: every Tessera client sends Content-Length).
//
// With TLS (tls_socket.h) the event loop also drives each connection's handshake, without
// blocking: a handshake not done within header_timeout is closed (no answer can be sent before
// it), a connection in its handshake may be evicted like one sending its headers, and requests
// are decrypted by the event loop and answers encrypted by the worker, with the same limits.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "server/buffered_stream.h"
#include "server/request_head.h"
#include "server/tls_socket.h"
#include "server/worker_pool.h"

namespace tessera {

struct FrontendLimits {
  int header_timeout_ms = 10'000;  // first byte of a request to the end of its headers
  int body_timeout_ms = 30'000;    // end of the headers to the end of the body
  int idle_timeout_ms = 5'000;     // a keep-alive connection between requests
  int write_timeout_ms = 30'000;   // each write of a response
  int max_connections = 1024;
  int user_threads = 16;
  int agent_threads = 256;     // at least the agents that long-poll at once
  int long_poll_threads = 16;  // answer released /v1/events polls (they wait parked)
  int max_queued = 512;        // complete requests waiting for a worker, per class
  // Long-polls parked at once (at most half of max_connections); one more answers the oldest
  // at once (as if its wait were over), so parked polls never fill the connection cap.
  int max_parked = 256;
  std::size_t max_header_bytes = 64 << 10;
  std::size_t max_body_bytes = 1 << 20;
  std::size_t keep_alive_max_requests = 100'000;
};

// How the front end holds a long-poll without a thread: `park` says, for a request of the
// long-poll class, which cursor it waits beyond and for how long (nullopt: answer it now, e.g.
// a caller that is not authenticated, so that its 401 comes at once and it holds nothing);
// `cursor` is the current one. A parked request is handed to a worker, with its wait set to 0,
// once the cursor has moved past it (Poke() says so) or its wait is over.
struct LongPollHooks {
  struct Wait {
    std::int64_t since = 0;
    std::chrono::milliseconds wait{0};
  };
  std::function<std::optional<Wait>(const RequestHead&)> park;
  std::function<std::int64_t()> cursor;
  std::string wait_param = "wait";  // the query parameter set to 0 on release
};

// httplib's router, handlers and error handling, fed a request already read into memory.
class RoutedServer : public httplib::Server {
 public:
  bool ProcessBuffered(httplib::Stream& stream, bool close_connection, bool& connection_closed) {
    return process_request(stream, close_connection, connection_closed, nullptr);
  }
};

class HttpFrontend {
 public:
  // With `tls` (outliving the front end) every connection speaks HTTPS; null: plain HTTP.
  HttpFrontend(RoutedServer& routes, FrontendLimits limits, const TlsContext* tls = nullptr);
  ~HttpFrontend();
  HttpFrontend(const HttpFrontend&) = delete;
  HttpFrontend& operator=(const HttpFrontend&) = delete;

  // Binds `host`:`port` (0 = any free port); returns the port bound.
  Result<int> Bind(const std::string& host, int port);
  // Runs the accept loop until Stop(). The workers are joined by the destructor, after the
  // controller has woken its long-polls.
  void Serve();
  void Stop();
  // Long-polls are parked (no thread) with these hooks. Call before Serve().
  void SetLongPollHooks(LongPollHooks hooks) { hooks_ = std::move(hooks); }
  // Something a parked long-poll may wait for happened. Thread-safe, cheap, never blocks.
  void Poke();

 private:
  using Clock = std::chrono::steady_clock;
  // kDiscard: refused (413), the body still arriving is read and dropped before the close, so
  // that the client sees the answer instead of a reset.
  // kHandshake: TLS's, before the first request.
  enum class Phase { kHandshake, kIdle, kHead, kBody, kParked, kBusy, kDiscard };
  struct Connection {
    int fd = -1;
    SSL* ssl = nullptr;  // with TLS; the event loop's, or the worker's while kBusy
    std::string buffer;
    Phase phase = Phase::kIdle;
    Clock::time_point since;
    RequestHead head;
    bool continue_sent = false;
    std::size_t served = 0;
    std::size_t discard = 0;     // kDiscard: body bytes still to drop
    std::string parked_request;  // kParked: the request, to hand to a worker on release
    std::int64_t parked_since = 0;
    Clock::time_point parked_until;
    PeerAddresses addresses;  // read once, when the connection is admitted
  };
  struct Returned {
    int fd;
    bool keep;
    bool armed;  // the worker watched the descriptor again itself (GiveBack)
  };

  void Accept();
  void Admit(int fd);
  bool EvictOne();
  void OnReadable(int fd);
  // Returns false when the connection was closed; true once it can read requests (or waits).
  bool Handshake(Connection& c);
  void Watch(int fd, bool writable, int op);
  void Advance(Connection& c);
  void Dispatch(Connection& c);
  bool Park(Connection& c, std::string& request);
  void ReleaseParked();
  void ReleaseOldestParked();
  void Release(Connection& c);
  void Post(Connection& c, std::string request);
  // Answers `status` and closes; with `linger`, keeps reading (and dropping) the body first.
  void Reject(Connection& c, int status, const std::string& code, const std::string& message,
              bool linger = false);
  void Close(int fd);
  void ExpireDeadlines();
  void TakeBackReturned();
  // From a worker. A kept connection with nothing buffered is watched again by the worker
  // itself, so the event loop is not woken for it: it takes the connection back when its next
  // request arrives (or at the next sweep). Otherwise the event loop is woken to do it.
  void GiveBack(int fd, bool keep, bool buffered);
  WorkerPool& PoolOf(RouteClass c);

  RoutedServer& routes_;
  FrontendLimits limits_;
  const TlsContext* tls_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  int spare_fd_ = -1;  // closed to accept-and-refuse when out of descriptors
  std::atomic<bool> stopping_{false};
  std::atomic<bool> poked_{false};
  LongPollHooks hooks_;
  std::size_t parked_ = 0;                           // connections in kParked
  std::unordered_map<int, Connection> connections_;  // the event thread's only
  std::mutex returned_mu_;
  std::vector<Returned> returned_;  // under returned_mu_
  std::unique_ptr<WorkerPool> agent_pool_, long_poll_pool_, user_pool_;
};

}  // namespace tessera
