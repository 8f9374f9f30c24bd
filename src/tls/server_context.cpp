#include "tls/server_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace tessera {

std::string OpenSslReason() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

std::string SetUpServerContext(SSL_CTX& ctx, const std::string& cert_file,
                               const std::string& key_file) {
  SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(&ctx, SSL_OP_NO_RENEGOTIATION);
  if (SSL_CTX_use_certificate_chain_file(&ctx, cert_file.c_str()) != 1)
    return "--tls-cert-file: cannot load " + cert_file + ": " + OpenSslReason();
  if (SSL_CTX_use_PrivateKey_file(&ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1)
    return "--tls-private-key-file: cannot load " + key_file + ": " + OpenSslReason();
  if (SSL_CTX_check_private_key(&ctx) != 1)
    return "--tls-private-key-file: " + key_file + " is not the key of " + cert_file + ": " +
           OpenSslReason();
  return "";
}

}  // namespace tessera
