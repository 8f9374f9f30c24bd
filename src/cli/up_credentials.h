// The credentials of a `tessera up` cluster, made once and kept in its state directory (every
// file 0600): DIR/auth/tokens.csv (tesserad --token-auth-file) with an admin, a metrics
// scraper and a gateway identity, each token also in its own file (admin.token,
// metrics.token, gateway.token: a Prometheus bearer_token_file), the agents' bootstrap token
// (bootstrap.token), and the CLI's context file DIR/tessera.config pointing at admin.token.
#pragma once

#include <string>

#include "core/status.h"

namespace tessera::cli {

struct UpCredentials {
  std::string token_file;      // tokens.csv
  std::string bootstrap_file;  // bootstrap.token
  std::string admin_token;     // the token itself
  std::string admin_token_file;
};

// Makes what is missing under `state`/auth (an existing token is kept across restarts).
Result<UpCredentials> EnsureUpCredentials(const std::string& state);

// Writes `state`/tessera.config for `server` (token file and CA may be empty).
Status WriteContext(const std::string& state, const std::string& server, const std::string& ca_file,
                    const std::string& token_file);

}  // namespace tessera::cli
