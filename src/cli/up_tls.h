// The TLS material of a `tessera up` cluster, made once with Debian's `openssl` command and
// kept in DIR/tls (keys 0600): a local CA (ca.crt, ca.key) and the controller's certificate
// for 127.0.0.1 and localhost signed by it (server.crt, server.key). The CLI's context and the
// agents check the controller against ca.crt.
#pragma once

#include <string>

#include "core/status.h"

namespace tessera::cli {

struct UpTls {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
};

// Makes what is missing under `state`/tls; the error carries openssl's output.
Result<UpTls> EnsureUpTls(const std::string& state);

}  // namespace tessera::cli
