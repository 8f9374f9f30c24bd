// TLS on the front end's own sockets (OpenSSL), so that HTTPS keeps the front end's guarantees
// (http_frontend.h): the handshake is driven, non-blocking, by the event loop within the header
// deadline, requests are decrypted there before any worker sees them, and a worker writes its
// answer through the connection's SSL with the usual write deadline.
//
// An SSL object is used by one thread at a time: the event loop, or the worker that holds the
// connection (the front end stops watching a connection while a worker has it).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string>

#include "core/status.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace tessera {

// The server side of TLS: a certificate chain and its private key (PEM), TLS 1.2 at least.
class TlsContext {
 public:
  // Errors name the file and OpenSSL's reason.
  static Result<std::unique_ptr<TlsContext>> Load(const std::string& cert_file,
                                                  const std::string& key_file);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // A new server-side SSL on `fd` (non-blocking), or null.
  SSL* Accept(int fd) const;

 private:
  explicit TlsContext(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* ctx_;
};

enum class HandshakeStep { kDone, kWantRead, kWantWrite, kFailed };
HandshakeStep ContinueHandshake(SSL* ssl);

// recv() and send() on a connection, through `ssl` when it is not null: > 0 bytes, 0 at the
// end of the stream (read), -1 with errno EAGAIN when the socket is not ready (`wants_write`,
// when given, says which readiness TLS waits for), -1 with another errno on failure. Never
// blocks, never raises SIGPIPE.
ssize_t SocketRecv(int fd, SSL* ssl, char* buf, std::size_t size);
ssize_t SocketSend(int fd, SSL* ssl, const char* buf, std::size_t size,
                   bool* wants_write = nullptr);
// Sends TLS's close_notify when it can without waiting, and frees `ssl` (null: nothing).
void EndTls(SSL* ssl);

}  // namespace tessera
