#include "agent/endpoint_tls.h"

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "tls/server_context.h"

namespace tessera {

namespace {

// Configures `ctx`; an empty string, or what failed.
std::string SetUp(SSL_CTX& ctx, const EndpointTls& tls) {
  if (std::string failure = SetUpServerContext(ctx, tls.cert_file, tls.key_file); !failure.empty())
    return failure;
  if (SSL_CTX_load_verify_locations(&ctx, tls.client_ca.c_str(), nullptr) != 1)
    return "--client-ca-file: cannot load " + tls.client_ca + ": " + OpenSslReason();
  STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(tls.client_ca.c_str());
  if (names != nullptr) SSL_CTX_set_client_CA_list(&ctx, names);
  // A certificate is asked for but not required (metrics and health are open); one that is sent
  // must chain to the client CA and be meant for clients, or the handshake fails.
  SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER, nullptr);
  SSL_CTX_set_purpose(&ctx, X509_PURPOSE_SSL_CLIENT);
  return "";
}

}  // namespace

Result<std::unique_ptr<httplib::Server>> MakeEndpointServer(const EndpointTls& tls) {
  if (!tls.enabled()) return std::make_unique<httplib::Server>();
  if (tls.key_file.empty()) return InvalidArgument("--tls-private-key-file: required with TLS");
  if (tls.client_ca.empty())
    return InvalidArgument(
        "--client-ca-file: required with TLS (the CA of the controller's client certificate)");
  std::string failure;
  auto server = std::make_unique<httplib::SSLServer>([&](SSL_CTX& ctx) {
    failure = SetUp(ctx, tls);
    return failure.empty();
  });
  if (!failure.empty()) return InvalidArgument(failure);
  if (!server->is_valid()) return IoError("TLS: cannot set up the endpoint: " + OpenSslReason());
  return std::unique_ptr<httplib::Server>(std::move(server));
}

bool CallerIsController(const httplib::Request& req, const std::string& controller_cn,
                        std::string* why) {
  if (req.ssl == nullptr) {
    *why = "this endpoint serves the controller only, over TLS";
    return false;
  }
  X509* cert = SSL_get1_peer_certificate(req.ssl);
  if (cert == nullptr) {
    *why = "no client certificate: only the controller may call this route";
    return false;
  }
  char cn[256] = {0};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof cn - 1);
  const bool verified = SSL_get_verify_result(req.ssl) == X509_V_OK;
  const bool for_clients = (X509_get_extended_key_usage(cert) & XKU_SSL_CLIENT) != 0;
  X509_free(cert);
  if (!verified || !for_clients) {
    *why = "the client certificate is not a verified client certificate";
    return false;
  }
  if (controller_cn != cn) {
    *why = "the client certificate names " + std::string(cn) + ", not the controller (" +
           controller_cn + ")";
    return false;
  }
  return true;
}

}  // namespace tessera
