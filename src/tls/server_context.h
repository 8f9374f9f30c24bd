// What the live daemons' TLS listeners set up alike: the controller's front end
// (server/tls_socket) and the agent's endpoint (agent/endpoint_tls) both serve TLS 1.2 or later
// without renegotiation, from a PEM certificate chain and its private key, and name the flag and
// file with OpenSSL's reason when one does not load.
#pragma once

#include <string>

typedef struct ssl_ctx_st SSL_CTX;

namespace tessera {

// OpenSSL's reason for the oldest failure queued on this thread; the queue is cleared.
std::string OpenSslReason();

// TLS >= 1.2, no renegotiation, `cert_file` (--tls-cert-file) and `key_file`
// (--tls-private-key-file) loaded and checked to belong together. Empty, or what failed.
std::string SetUpServerContext(SSL_CTX& ctx, const std::string& cert_file,
                               const std::string& key_file);

}  // namespace tessera
