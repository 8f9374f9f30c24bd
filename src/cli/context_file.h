// The CLI's context file, shaped like a kubeconfig (YAML or JSON):
//
//   apiVersion: tessera/v1
//   kind: Config
//   current-context: local
//   clusters: [{name: local, cluster: {server: https://127.0.0.1:7480,
//                                      certificate-authority: /state/tls/ca.crt}}]
//   users:    [{name: admin, user: {tokenFile: /state/admin.token}}]   # or token: ...
//   contexts: [{name: local, context: {cluster: local, user: admin}}]
//
// `tessera up` writes one into its state directory (DIR/tessera.config); the CLI reads it with
// --context-file, $TESSERA_CONFIG, or through --state.
#pragma once

#include <string>

#include "core/status.h"

namespace tessera::cli {

// Where and how to reach one cluster.
struct ClusterAccess {
  std::string server;   // URL
  std::string token;    // bearer token; empty: none
  std::string ca_file;  // CA for an https server; empty: the system's
};

// The current context of the file at `path` (or `context` when named). Relative paths in it
// are taken from the file's directory. Errors name the file and the field.
Result<ClusterAccess> ReadContextFile(const std::string& path, const std::string& context = "");

// A context file for one cluster, one user and one context named "local".
std::string ContextFileText(const std::string& server, const std::string& ca_file,
                            const std::string& token_file);

}  // namespace tessera::cli
