// The agents' credentials. A new node registers with a bootstrap token (a shared secret of the
// cluster, tesserad --bootstrap-token-file) and is issued a secret of its own; from then on
// only that secret acts for the node: its heartbeats, its tasks' reports and its
// re-registration. One agent process that emulates many nodes (--simulate-nodes) presents its
// first secret when it registers the others (one by one, or in batches: register-nodes), and that
// one secret then covers exactly the nodes registered with it, no other.
//
// Only SHA-256 digests are kept: in memory and in the store (Change::put_node_credentials,
// committed before the registration is answered), so a restarted controller, or the standby
// that takes over on etcd, knows every node the one before admitted. Each term of a
// controller attaches the store it serves from (Attach), which loads every digest; between
// terms (a standby) nothing is bound.
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
#include "store/store.h"

namespace tessera {

class NodeCredentials {
 public:
  // `bootstrap_tokens`: the tokens a new node may register with (none: nodes cannot register).
  explicit NodeCredentials(const std::vector<std::string>& bootstrap_tokens);

  // Serves from `store` (outliving the term) from now on: every digest is loaded from it.
  // `legacy_file` (may be ""): the "node digest" lines that earlier versions kept beside the
  // database; nodes it has and the store has not are committed to the store once.
  Status Attach(Store& store, const std::string& legacy_file);
  // The term is over: the store is not used again, and no node is known until Attach.
  void Detach();

  bool IsBootstrapToken(std::string_view token) const;
  // The nodes `secret` acts for; empty when it is no node's secret.
  std::set<std::string> NodesOf(std::string_view secret) const;
  // Whether `node` has a credential (a registration of it needs that credential).
  bool HasCredential(const std::string& node) const;
  // Gives `node` the credential `secret`, committed to the store before returning.
  Status Bind(const std::string& node, std::string_view secret);
  // Gives every node of `nodes` the credential `secret`, in one store commit.
  Status BindAll(const std::vector<std::string>& nodes, std::string_view secret);

 private:
  void BindLocked(const std::string& node, const std::string& digest);

  const std::set<std::string> bootstrap_digests_;
  mutable std::mutex mu_;
  Store* store_ = nullptr;                                        // under mu_; null between terms
  std::map<std::string, std::string> digest_of_node_;             // under mu_
  std::map<std::string, std::set<std::string>> nodes_of_digest_;  // under mu_
};

// Reads a file of tokens, one per line (blank lines and '#' comments skipped).
Result<std::vector<std::string>> ReadTokenLines(const std::string& path);

// The "node digest" lines of an earlier version's credential file (the last line of a node
// wins); a file that does not exist has none.
Result<std::vector<NodeCredentialRecord>> ReadLegacyCredentialFile(const std::string& path);

}  // namespace tessera
