// TLS on the agent's own endpoint (task logs, exec, metrics), and who may call it. The agent
// serves HTTPS with its certificate and asks every caller for a client certificate signed by
// --client-ca-file; the routes that reach into tasks (logs, exec, the failure drill) answer only
// a caller whose verified certificate is the controller's (extended key usage clientAuth, common
// name --controller-name), as the kubelet answers only the API server's client certificate
// (kube-apiserver --kubelet-client-certificate). Health and metrics stay open to any TLS client,
// so Prometheus scrapes them without a certificate; they carry no job data.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"

namespace httplib {
class Server;
struct Request;
}  // namespace httplib

namespace tessera {

struct EndpointTls {
  std::string cert_file;  // --tls-cert-file: the agent's serving certificate (PEM)
  std::string key_file;   // --tls-private-key-file
  std::string client_ca;  // --client-ca-file: the CA of the controller's client certificate
  std::string controller_cn = "tessera-controller";  // --controller-name
  bool enabled() const { return !cert_file.empty(); }
};

// An HTTPS server with `tls` (errors name the file and OpenSSL's reason); a plain one when TLS
// is not enabled.
Result<std::unique_ptr<httplib::Server>> MakeEndpointServer(const EndpointTls& tls);

// Whether `req` came over TLS from a client whose certificate chains to the client CA (the
// handshake checked it), is meant for client authentication, and names `controller_cn`.
// `why` says what was missing.
bool CallerIsController(const httplib::Request& req, const std::string& controller_cn,
                        std::string* why);

}  // namespace tessera
