// The TLS material of a `tessera up` cluster, made once with Debian's `openssl` command and
// kept in DIR/tls (keys 0600): a local CA (ca.crt, ca.key) and, signed by it, the controller's
// certificate for 127.0.0.1 and localhost (server.crt, server.key), the agents' endpoint
// certificate (agent.crt, agent.key) and the controller's client certificate for the agents
// (controller-client.crt, .key: extended key usage clientAuth, CN tessera-controller). The
// CLI's context and the agents check the controller against ca.crt, the controller checks the
// agents against it, and the agents answer task logs and exec only to the client certificate.
#pragma once

#include <string>

#include "core/status.h"

namespace tessera::cli {

struct UpTls {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  std::string agent_cert_file, agent_key_file;
  std::string client_cert_file, client_key_file;
  // With --store etcd (EnsureEtcdTls): the members' certificate, for clients and for peers.
  std::string etcd_cert_file, etcd_key_file;
};

// Makes what is missing under `state`/tls; the error carries openssl's output.
Result<UpTls> EnsureUpTls(const std::string& state);

// The etcd members' certificate and key (etcd.crt, etcd.key: 127.0.0.1 and localhost, extended
// key usage serverAuth and clientAuth, since a member is its peers' client too), signed by the
// CA of `tls`; made when missing, and named in `tls`. The controller reaches etcd with its
// client certificate (controller-client.crt), which the members require (--client-cert-auth).
Status EnsureEtcdTls(const std::string& state, UpTls& tls);

}  // namespace tessera::cli
