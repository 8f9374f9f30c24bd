#include "server/http_frontend.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "server/buffered_stream.h"

namespace tessera {

namespace {

const char* ReasonOf(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 408:
      return "Request Timeout";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 503:
      return "Service Unavailable";
  }
  return "Error";
}

// Raises the soft limit on descriptors towards what max_connections needs.
void RaiseDescriptorLimit(int max_connections) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return;
  const rlim_t want = static_cast<rlim_t>(max_connections) + 256;
  if (lim.rlim_cur >= want) return;
  lim.rlim_cur = std::min(want, lim.rlim_max);
  ::setrlimit(RLIMIT_NOFILE, &lim);
}

}  // namespace

HttpFrontend::HttpFrontend(RoutedServer& routes, FrontendLimits limits, const TlsContext* tls)
    : routes_(routes), limits_(limits), tls_(tls) {
  RaiseDescriptorLimit(limits_.max_connections);
  const auto queued = static_cast<std::size_t>(limits_.max_queued);
  agent_pool_ = std::make_unique<WorkerPool>(limits_.agent_threads, queued);
  long_poll_pool_ = std::make_unique<WorkerPool>(limits_.long_poll_threads, queued);
  user_pool_ = std::make_unique<WorkerPool>(limits_.user_threads, queued);
}

HttpFrontend::~HttpFrontend() {
  Stop();
  for (auto* pool : {agent_pool_.get(), long_poll_pool_.get(), user_pool_.get()}) {
    pool->Shutdown();
  }
  TakeBackReturned();
  for (auto& [fd, c] : connections_) {
    EndTls(c.ssl);
    ::close(fd);
  }
  for (int fd : {listen_fd_, epoll_fd_, wake_fd_, spare_fd_}) {
    if (fd >= 0) ::close(fd);
  }
}

Result<int> HttpFrontend::Bind(const std::string& host, int port) {
  const std::string where = host + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (::getaddrinfo(host.c_str(), service.c_str(), &hints, &found) != 0 || found == nullptr) {
    return IoError("cannot bind " + where + ": unknown address");
  }
  std::string why = "no address";
  for (addrinfo* a = found; a != nullptr && listen_fd_ < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0) {
      listen_fd_ = fd;
    } else {
      why = std::strerror(errno);
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  if (listen_fd_ < 0) return IoError("cannot bind " + where + " (in use?): " + why);
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  const int bound = addr.ss_family == AF_INET6
                        ? ntohs(reinterpret_cast<sockaddr_in6&>(addr).sin6_port)
                        : ntohs(reinterpret_cast<sockaddr_in&>(addr).sin_port);
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) return IoError(std::string("epoll: ") + std::strerror(errno));
  for (int fd : {listen_fd_, wake_fd_}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  }
  return bound;
}

void HttpFrontend::Stop() {
  stopping_ = true;
  if (wake_fd_ >= 0) {
    const std::uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
  }
}

void HttpFrontend::Serve() {
  std::vector<epoll_event> events(256);
  auto last_sweep = Clock::now();
  while (!stopping_) {
    const int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), 100);
    for (int i = 0; i < n; ++i) {
      const int fd = events[static_cast<std::size_t>(i)].data.fd;
      if (fd == listen_fd_) {
        Accept();
      } else if (fd == wake_fd_) {
        std::uint64_t count = 0;
        (void)!::read(wake_fd_, &count, sizeof count);
        TakeBackReturned();
        if (poked_.exchange(false)) ReleaseParked();
      } else {
        OnReadable(fd);
      }
    }
    if (Clock::now() - last_sweep >= std::chrono::milliseconds(100)) {
      TakeBackReturned();  // connections the workers watched again, idle since: their timeouts
      ExpireDeadlines();
      ReleaseParked();
      last_sweep = Clock::now();
    }
  }
  ::close(listen_fd_);  // refuse new connections at once; workers finish in the destructor
  listen_fd_ = -1;
}

void HttpFrontend::Accept() {
  while (true) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      Admit(fd);
      continue;
    }
    if (errno == EINTR) continue;
    if ((errno == EMFILE || errno == ENFILE) && spare_fd_ >= 0) {
      // Out of descriptors: make room by evicting, or accept and close the newcomer so that
      // the listening socket does not stay readable forever.
      if (EvictOne()) continue;
      ::close(spare_fd_);
      const int refused = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (refused >= 0) ::close(refused);
      spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    }
    return;
  }
}

void HttpFrontend::Admit(int fd) {
  if (connections_.size() >= static_cast<std::size_t>(limits_.max_connections) && !EvictOne()) {
    ::close(fd);  // every connection has a request with a worker: nothing to give up
    return;
  }
  const int yes = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
  SSL* ssl = nullptr;
  if (tls_ != nullptr && (ssl = tls_->Accept(fd)) == nullptr) {
    ::close(fd);
    return;
  }
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.fd = fd;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    EndTls(ssl);
    ::close(fd);
    return;
  }
  Connection& c = connections_[fd];
  c.fd = fd;
  c.ssl = ssl;
  c.addresses = AddressesOf(fd);
  c.phase = ssl != nullptr ? Phase::kHandshake : Phase::kIdle;
  c.since = Clock::now();
}

void HttpFrontend::Watch(int fd, bool writable, int op) {
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP | (writable ? EPOLLOUT : 0u);
  ev.data.fd = fd;
  ::epoll_ctl(epoll_fd_, op, fd, &ev);
}

// One step of the TLS handshake; done, the connection waits for its first request.
bool HttpFrontend::Handshake(Connection& c) {
  switch (ContinueHandshake(c.ssl)) {
    case HandshakeStep::kDone:
      Watch(c.fd, false, EPOLL_CTL_MOD);
      c.phase = Phase::kIdle;
      c.since = Clock::now();
      return true;
    case HandshakeStep::kWantRead:
      Watch(c.fd, false, EPOLL_CTL_MOD);
      return true;
    case HandshakeStep::kWantWrite:
      Watch(c.fd, true, EPOLL_CTL_MOD);
      return true;
    case HandshakeStep::kFailed:
      break;
  }
  Close(c.fd);
  return false;
}

// The longest-idle keep-alive connection, or else the one slowest to send its request.
bool HttpFrontend::EvictOne() {
  const Connection* victim = nullptr;
  for (const auto& [fd, c] : connections_) {
    if (c.phase == Phase::kBusy || c.phase == Phase::kParked) continue;
    const bool idle = c.phase == Phase::kIdle;
    const bool victim_idle = victim != nullptr && victim->phase == Phase::kIdle;
    if (victim == nullptr || (idle && !victim_idle) ||
        (idle == victim_idle && c.since < victim->since)) {
      victim = &c;
    }
  }
  if (victim == nullptr) return false;
  Close(victim->fd);
  return true;
}

void HttpFrontend::OnReadable(int fd) {
  auto it = connections_.find(fd);
  if (it != connections_.end() && it->second.phase == Phase::kBusy) {
    TakeBackReturned();  // a worker watched it again (GiveBack): it is idle now
    it = connections_.find(fd);
    if (it != connections_.end() && it->second.phase == Phase::kBusy) return;
  }
  if (it == connections_.end()) return;
  Connection& c = it->second;
  if (c.phase == Phase::kHandshake && (!Handshake(c) || c.phase == Phase::kHandshake)) return;
  const std::size_t cap = limits_.max_header_bytes + limits_.max_body_bytes + 4096;
  char buf[16384];
  bool eof = false;
  while (true) {
    const ssize_t n = SocketRecv(fd, c.ssl, buf, sizeof buf);
    if (n > 0 && c.phase == Phase::kDiscard) {
      c.discard -= std::min(c.discard, static_cast<std::size_t>(n));
      if (c.discard == 0) return Close(fd);
      continue;
    }
    if (n > 0) {
      c.buffer.append(buf, static_cast<std::size_t>(n));
      if (c.buffer.size() > cap) break;  // Advance refuses what is too large
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    eof = true;  // closed by the client (a complete request is still answered), or broken
    break;
  }
  Advance(c);  // may close the connection: `c` is not used after it
  auto again = connections_.find(fd);
  if (eof && again != connections_.end() && again->second.phase != Phase::kBusy) Close(fd);
}

void HttpFrontend::Advance(Connection& c) {
  if (c.phase == Phase::kBusy || c.phase == Phase::kParked || c.phase == Phase::kDiscard ||
      c.phase == Phase::kHandshake)
    return;
  if (c.buffer.empty()) return;
  if (c.phase == Phase::kIdle) {
    c.phase = Phase::kHead;
    c.since = Clock::now();
  }
  if (c.phase == Phase::kHead) {
    HeadParse parse = ParseRequestHead(c.buffer);
    if (!parse.error.empty()) return Reject(c, 400, "InvalidArgument", parse.error);
    if (!parse.head) {
      if (c.buffer.size() > limits_.max_header_bytes) {
        return Reject(c, 431, "InvalidArgument",
                      "request headers too large (at most " +
                          std::to_string(limits_.max_header_bytes >> 10) + " KiB)");
      }
      return;
    }
    c.head = std::move(*parse.head);
    if (c.head.chunked) {
      return Reject(c, 411, "InvalidArgument",
                    "chunked request bodies are not accepted: send Content-Length");
    }
    if (c.head.content_length > limits_.max_body_bytes) {
      return Reject(c, 413, "InvalidArgument",
                    "request body too large (at most " +
                        std::to_string(limits_.max_body_bytes >> 20) + " MiB)",
                    /*linger=*/true);
    }
    c.phase = Phase::kBody;
    c.since = Clock::now();
    c.continue_sent = false;
  }
  const std::size_t total = c.head.head_bytes + c.head.content_length;
  if (c.buffer.size() < total) {
    if (c.head.expects_continue && !c.continue_sent) {
      static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
      (void)!SocketSend(c.fd, c.ssl, kContinue, sizeof kContinue - 1);
      c.continue_sent = true;
    }
    return;
  }
  Dispatch(c);
}

void HttpFrontend::Dispatch(Connection& c) {
  const std::size_t total = c.head.head_bytes + c.head.content_length;
  std::string request = c.buffer.substr(0, total);
  c.buffer.erase(0, total);
  if (c.head.expects_continue) request = WithoutExpect(request, c.head);
  if (c.head.route == RouteClass::kLongPoll && Park(c, request)) return;
  Post(c, std::move(request));
}

// A long-poll with nothing to answer yet waits here, on no thread, still watched by epoll so
// that a client that gives up is closed.
bool HttpFrontend::Park(Connection& c, std::string& request) {
  if (!hooks_.park || !hooks_.cursor) return false;
  const auto wait = hooks_.park(c.head);
  if (!wait || wait->wait.count() <= 0 || hooks_.cursor() > wait->since) return false;
  const auto cap = static_cast<std::size_t>(
      std::max(1, std::min(limits_.max_parked, limits_.max_connections / 2)));
  while (parked_ >= cap) ReleaseOldestParked();
  c.phase = Phase::kParked;
  c.since = Clock::now();
  c.parked_request = std::move(request);
  c.parked_since = wait->since;
  c.parked_until = Clock::now() + wait->wait;
  ++parked_;
  return true;
}

void HttpFrontend::Poke() {
  poked_ = true;
  const std::uint64_t one = 1;
  if (wake_fd_ >= 0) (void)!::write(wake_fd_, &one, sizeof one);
}

// Parked long-polls whose cursor moved or whose wait is over go to a worker, wait=0.
void HttpFrontend::ReleaseParked() {
  if (parked_ == 0) return;
  const std::int64_t cursor = hooks_.cursor();
  const auto now = Clock::now();
  std::vector<int> due;
  for (const auto& [fd, c] : connections_) {
    if (c.phase == Phase::kParked && (cursor > c.parked_since || now >= c.parked_until)) {
      due.push_back(fd);
    }
  }
  for (int fd : due) Release(connections_.at(fd));
}

// At the cap: the long-poll parked longest is answered now, with what there is.
void HttpFrontend::ReleaseOldestParked() {
  Connection* oldest = nullptr;
  for (auto& [fd, c] : connections_) {
    if (c.phase == Phase::kParked && (oldest == nullptr || c.since < oldest->since)) oldest = &c;
  }
  if (oldest == nullptr) {
    parked_ = 0;  // cannot happen: the count follows the phases
    return;
  }
  Release(*oldest);
}

void HttpFrontend::Release(Connection& c) {
  --parked_;
  std::string request = WithQueryValue(c.parked_request, hooks_.wait_param, "0");
  c.parked_request.clear();
  Post(c, std::move(request));
}

void HttpFrontend::Post(Connection& c, std::string request) {
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
  c.phase = Phase::kBusy;
  ++c.served;
  const bool last = c.served >= limits_.keep_alive_max_requests;
  const int fd = c.fd;
  const int write_timeout = limits_.write_timeout_ms;
  WorkerPool& pool = PoolOf(c.head.route);
  SSL* ssl = c.ssl;
  // Nothing else is read from a busy connection, so what is buffered now (a pipelined
  // request) is what the event loop will find when the worker gives it back.
  const bool buffered = !c.buffer.empty();
  const bool posted =
      pool.TryPost([this, fd, ssl, last, write_timeout, buffered, addresses = c.addresses,
                    request = std::move(request)](bool run) mutable {
        if (!run) return GiveBack(fd, false, buffered);
        BufferedStream stream(fd, ssl, std::move(request), write_timeout, std::move(addresses));
        bool closed = last;
        const bool ok = routes_.ProcessBuffered(stream, last, closed);
        GiveBack(fd, ok && !closed && stream.is_writable(), buffered);
      });
  if (!posted) {
    c.phase = Phase::kHead;  // so that Reject closes it as a connection of the event loop
    Reject(c, 503, "Unavailable",
           std::string("too many ") + RouteClassName(c.head.route) + " requests in flight (" +
               std::to_string(pool.threads()) + " workers busy, " +
               std::to_string(pool.max_queued()) + " waiting); retry shortly");
  }
}

void HttpFrontend::Reject(Connection& c, int status, const std::string& code,
                          const std::string& message, bool linger) {
  const std::string body =
      nlohmann::json(
          {{"error", {{"code", code}, {"message", message}, {"details", nlohmann::json::array()}}}})
          .dump() +
      "\n";
  std::string response =
      "HTTP/1.1 " + std::to_string(status) + " " + ReasonOf(status) +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\nConnection: close\r\n";
  if (status == 503) response += "Retry-After: 1\r\n";
  response += "\r\n" + body;
  // Best effort: a client too slow to take a few hundred bytes does not get them.
  (void)!SocketSend(c.fd, c.ssl, response.data(), response.size());
  const std::size_t arrived = c.buffer.size() - std::min(c.buffer.size(), c.head.head_bytes);
  if (!linger || arrived >= c.head.content_length) return Close(c.fd);
  ::shutdown(c.fd, SHUT_WR);
  c.phase = Phase::kDiscard;
  c.discard = c.head.content_length - arrived;
  c.buffer.clear();
  c.since = Clock::now();
}

void HttpFrontend::Close(int fd) {
  if (auto it = connections_.find(fd); it != connections_.end()) {
    if (it->second.phase == Phase::kParked) --parked_;
    EndTls(it->second.ssl);
  }
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  ::close(fd);
  connections_.erase(fd);
}

void HttpFrontend::ExpireDeadlines() {
  const auto now = Clock::now();
  const auto over = [&](const Connection& c, int ms) {
    return now - c.since > std::chrono::milliseconds(ms);
  };
  std::vector<int> idle, slow_head, slow_body;
  for (const auto& [fd, c] : connections_) {
    if (c.phase == Phase::kIdle && over(c, limits_.idle_timeout_ms)) idle.push_back(fd);
    if (c.phase == Phase::kDiscard && over(c, limits_.body_timeout_ms)) idle.push_back(fd);
    if (c.phase == Phase::kHead && over(c, limits_.header_timeout_ms)) slow_head.push_back(fd);
    if (c.phase == Phase::kHandshake && over(c, limits_.header_timeout_ms)) idle.push_back(fd);
    if (c.phase == Phase::kBody && over(c, limits_.body_timeout_ms)) slow_body.push_back(fd);
  }
  for (int fd : idle) Close(fd);
  for (int fd : slow_head) {
    Reject(
        connections_.at(fd), 408, "DeadlineExceeded",
        "request headers not received within " + std::to_string(limits_.header_timeout_ms) + " ms");
  }
  for (int fd : slow_body) {
    Reject(connections_.at(fd), 408, "DeadlineExceeded",
           "request body not received within " + std::to_string(limits_.body_timeout_ms) + " ms");
  }
}

void HttpFrontend::GiveBack(int fd, bool keep, bool buffered) {
  const bool rearm = keep && !buffered && !stopping_;
  {
    std::lock_guard lock(returned_mu_);
    returned_.push_back({fd, keep, rearm});
  }
  if (rearm) {
    // Recorded first, so that the event loop, woken by the next request, finds the record.
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = fd;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) == 0) return;
    std::lock_guard lock(returned_mu_);
    returned_.push_back({fd, false, false});  // after the first: the event loop closes it
  }
  const std::uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
}

void HttpFrontend::TakeBackReturned() {
  std::vector<Returned> back;
  {
    std::lock_guard lock(returned_mu_);
    back.swap(returned_);
  }
  for (const auto& r : back) {
    auto it = connections_.find(r.fd);
    if (it == connections_.end()) continue;
    if (!r.keep || stopping_) {
      Close(r.fd);
      continue;
    }
    Connection& c = it->second;
    c.phase = Phase::kIdle;
    c.since = Clock::now();
    if (r.armed) continue;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = r.fd;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, r.fd, &ev) != 0) {
      Close(r.fd);
      continue;
    }
    Advance(c);  // a pipelined request may already be buffered
  }
}

WorkerPool& HttpFrontend::PoolOf(RouteClass c) {
  switch (c) {
    case RouteClass::kAgent:
      return *agent_pool_;
    case RouteClass::kLongPoll:
      return *long_poll_pool_;
    case RouteClass::kUser:
      return *user_pool_;
  }
  return *user_pool_;
}

}  // namespace tessera
