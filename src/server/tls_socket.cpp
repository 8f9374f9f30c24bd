#include "server/tls_socket.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <csignal>

#include "tls/server_context.h"

namespace tessera {

namespace {

// errno for an SSL call that failed with `ret`; true when the failure is only "not ready".
bool NotReady(SSL* ssl, int ret, bool* wants_write) {
  const int err = SSL_get_error(ssl, ret);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
    if (wants_write != nullptr) *wants_write = err == SSL_ERROR_WANT_WRITE;
    errno = EAGAIN;
    return true;
  }
  ERR_clear_error();
  if (err != SSL_ERROR_SYSCALL || errno == 0) errno = EPROTO;
  return false;
}

}  // namespace

Result<std::unique_ptr<TlsContext>> TlsContext::Load(const std::string& cert_file,
                                                     const std::string& key_file) {
  // OpenSSL writes with write(2), not send(MSG_NOSIGNAL): a client gone must not kill us.
  ::signal(SIGPIPE, SIG_IGN);
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return IoError("TLS: " + OpenSslReason());
  std::unique_ptr<TlsContext> out(new TlsContext(ctx));
  // A worker's write that waited resumes from where it was, with what is left.
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (std::string failure = SetUpServerContext(*ctx, cert_file, key_file); !failure.empty())
    return InvalidArgument(failure);
  return out;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

SSL* TlsContext::Accept(int fd) const {
  SSL* ssl = SSL_new(ctx_);
  if (ssl == nullptr) return nullptr;
  if (SSL_set_fd(ssl, fd) != 1) {
    SSL_free(ssl);
    return nullptr;
  }
  SSL_set_accept_state(ssl);
  return ssl;
}

HandshakeStep ContinueHandshake(SSL* ssl) {
  const int ret = SSL_do_handshake(ssl);
  if (ret == 1) return HandshakeStep::kDone;
  bool wants_write = false;
  if (NotReady(ssl, ret, &wants_write)) {
    return wants_write ? HandshakeStep::kWantWrite : HandshakeStep::kWantRead;
  }
  return HandshakeStep::kFailed;
}

ssize_t SocketRecv(int fd, SSL* ssl, char* buf, std::size_t size) {
  if (ssl == nullptr) return ::recv(fd, buf, size, 0);
  const int ret = SSL_read(ssl, buf, static_cast<int>(std::min<std::size_t>(size, 1 << 30)));
  if (ret > 0) return ret;
  if (SSL_get_error(ssl, ret) == SSL_ERROR_ZERO_RETURN) return 0;  // close_notify
  NotReady(ssl, ret, nullptr);
  return -1;
}

ssize_t SocketSend(int fd, SSL* ssl, const char* buf, std::size_t size, bool* wants_write) {
  if (ssl == nullptr) {
    if (wants_write != nullptr) *wants_write = true;
    return ::send(fd, buf, size, MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  const int ret = SSL_write(ssl, buf, static_cast<int>(std::min<std::size_t>(size, 1 << 30)));
  if (ret > 0) return ret;
  NotReady(ssl, ret, wants_write);
  return -1;
}

void EndTls(SSL* ssl) {
  if (ssl == nullptr) return;
  if (SSL_is_init_finished(ssl)) SSL_shutdown(ssl);  // one try: the socket is non-blocking
  ERR_clear_error();
  SSL_free(ssl);
}

}  // namespace tessera
