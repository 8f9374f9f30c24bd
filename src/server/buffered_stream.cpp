#include "server/buffered_stream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace tessera {

namespace {

void AddressOf(const sockaddr_storage& addr, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = {0};
  if (addr.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(addr);
    ::inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
    port = ntohs(a.sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(addr);
    ::inet_ntop(AF_INET6, &a.sin6_addr, text, sizeof text);
    port = ntohs(a.sin6_port);
  }
  ip = text;
}

}  // namespace

ssize_t BufferedStream::read(char* ptr, size_t size) {
  const std::size_t n = std::min(size, request_.size() - pos_);
  std::memcpy(ptr, request_.data() + pos_, n);
  pos_ += n;
  return static_cast<ssize_t>(n);
}

ssize_t BufferedStream::write(const char* ptr, size_t size) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(write_timeout_ms_);
  std::size_t done = 0;
  while (done < size && !write_failed_) {
    bool wants_write = true;
    const ssize_t n = SocketSend(fd_, ssl_, ptr + done, size - done, &wants_write);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // A client that does not read its answer holds this worker at most until the deadline.
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      pollfd p{fd_, static_cast<short>(wants_write ? POLLOUT : POLLIN), 0};
      if (left > 0 && ::poll(&p, 1, static_cast<int>(left)) > 0) continue;
    }
    write_failed_ = true;
  }
  return write_failed_ ? -1 : static_cast<ssize_t>(done);
}

PeerAddresses AddressesOf(int fd) {
  PeerAddresses out;
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    AddressOf(addr, out.remote_ip, out.remote_port);
  addr = {};
  len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    AddressOf(addr, out.local_ip, out.local_port);
  return out;
}

void BufferedStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  ip = addresses_.remote_ip;
  port = addresses_.remote_port;
}

void BufferedStream::get_local_ip_and_port(std::string& ip, int& port) const {
  ip = addresses_.local_ip;
  port = addresses_.local_port;
}

}  // namespace tessera
