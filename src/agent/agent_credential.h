// What an agent proves itself with to the controller: the cluster's bootstrap token (read from
// --bootstrap-token-file), used only to register a node that has no credential yet, and the
// node credential the controller issues on that first registration, kept in STATE/credential
// (mode 0600) so that the agent's restarts and re-registrations use it. Also the CA the
// controller's TLS certificate is checked against (--ca-file), when the URL is https.
//
// Thread-safety: every method is thread-safe.
#pragma once

#include <mutex>
#include <string>

#include "core/status.h"

namespace httplib {
class Client;
}

namespace tessera {

class AgentCredential {
 public:
  // Reads `state_dir`/credential when present and the bootstrap token file when given.
  Status Load(const std::string& state_dir, const std::string& bootstrap_token_file,
              const std::string& ca_file);

  // Sets the bearer token (the node credential, once there is one) and TLS checks on `client`.
  void Apply(httplib::Client& client) const;
  // The same, plus the bootstrap token, for a registration.
  void ApplyForRegistration(httplib::Client& client) const;
  // Keeps a credential the controller issued (durably, before returning).
  Status Keep(const std::string& secret);
  bool has_credential() const;

 private:
  mutable std::mutex mu_;
  std::string path_;
  std::string secret_;
  std::string bootstrap_;
  std::string ca_file_;
};

}  // namespace tessera
