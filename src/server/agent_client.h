// How the controller (and `tessera top`) calls an agent's endpoint (agent/endpoint_tls.h): over
// HTTPS when the agent's URL says so, its certificate checked against `ca_file`, and, for the
// controller, with its client certificate, which the agent requires for task logs and exec (as
// kube-apiserver's --kubelet-client-certificate and --kubelet-certificate-authority).
#pragma once

#include <string>

namespace httplib {
class Client;
}

namespace tessera {

struct AgentClientTls {
  std::string ca_file;    // tesserad --agent-ca-file; empty: the system's CAs
  std::string cert_file;  // --agent-client-cert-file; empty: no client certificate
  std::string key_file;   // --agent-client-key-file
};

// A client for `url` with `tls` applied and short timeouts (connect 3 s, read `read_timeout_s`).
httplib::Client AgentClient(const std::string& url, const AgentClientTls& tls,
                            int read_timeout_s = 10);

}  // namespace tessera
