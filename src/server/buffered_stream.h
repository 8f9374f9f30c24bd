// The httplib::Stream a worker hands to httplib's router: the request comes from memory (the
// front end read all of it, within its deadlines, before a worker was involved) and the
// response goes to the socket (through the connection's TLS when it has one), each write
// bounded by a deadline.
#pragma once

#include <httplib.h>

#include <string>

#include "server/tls_socket.h"

namespace tessera {

// The two ends of a connection, as httplib reports them to handlers (REMOTE_ADDR etc.).
struct PeerAddresses {
  std::string remote_ip, local_ip;
  int remote_port = 0, local_port = 0;
};
// Read from the socket once (getpeername, getsockname), not once per request.
PeerAddresses AddressesOf(int fd);

class BufferedStream final : public httplib::Stream {
 public:
  // `ssl`: the connection's TLS, null for plain HTTP.
  BufferedStream(int fd, SSL* ssl, std::string request, int write_timeout_ms,
                 PeerAddresses addresses)
      : fd_(fd),
        ssl_(ssl),
        request_(std::move(request)),
        write_timeout_ms_(write_timeout_ms),
        addresses_(std::move(addresses)) {}

  bool is_readable() const override { return pos_ < request_.size(); }
  bool is_writable() const override { return !write_failed_; }
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  int socket() const override { return fd_; }

 private:
  int fd_;
  SSL* ssl_;
  std::string request_;
  std::size_t pos_ = 0;
  int write_timeout_ms_;
  PeerAddresses addresses_;
  bool write_failed_ = false;
};

}  // namespace tessera
