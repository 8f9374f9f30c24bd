// The agents' credentials. A new node registers with a bootstrap token (a shared secret of the
// cluster, tesserad --bootstrap-token-file) and is issued a secret of its own; from then on
// only that secret acts for the node: its heartbeats, its tasks' reports and its
// re-registration. One agent process that emulates many nodes (--simulate-nodes) presents its
// first secret when it registers the others, and that one secret then covers all of them.
//
// Only SHA-256 digests are kept: in memory and in an append-only file (mode 0600) of lines
// "node digest", so a controller restart keeps every node's credential. The last line of a
// node wins. A secret or node not known is looked up again in the file (lines another
// controller of the same state directory appended).
//
// Thread-safety: every method is thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tessera {

class NodeCredentials {
 public:
  // Loads `path` (created when missing). `bootstrap_tokens` are the tokens a new node may
  // register with (none: nodes cannot register).
  static Result<std::unique_ptr<NodeCredentials>> Open(
      const std::string& path, const std::vector<std::string>& bootstrap_tokens);

  bool IsBootstrapToken(std::string_view token) const;
  // The nodes `secret` acts for; empty when it is no node's secret.
  std::set<std::string> NodesOf(std::string_view secret) const;
  // Whether `node` has a credential (a registration of it needs that credential).
  bool HasCredential(const std::string& node) const;
  // Gives `node` the credential `secret` (durably, before returning).
  Status Bind(const std::string& node, std::string_view secret);

 private:
  NodeCredentials(std::string path, std::set<std::string> bootstrap_digests)
      : path_(std::move(path)), bootstrap_digests_(std::move(bootstrap_digests)) {}
  void BindLocked(const std::string& node, const std::string& digest) const;
  Status CatchUpLocked() const;

  const std::string path_;
  const std::set<std::string> bootstrap_digests_;
  mutable std::mutex mu_;
  // Under mu_; mutable: the lookups catch up with the file.
  mutable std::size_t read_bytes_ = 0;
  mutable std::map<std::string, std::string> digest_of_node_;
  mutable std::map<std::string, std::set<std::string>> nodes_of_digest_;
};

// Reads a file of tokens, one per line (blank lines and '#' comments skipped).
Result<std::vector<std::string>> ReadTokenLines(const std::string& path);

}  // namespace tessera
