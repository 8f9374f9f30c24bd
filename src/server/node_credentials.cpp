#include "server/node_credentials.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "server/secrets.h"

namespace tessera {

namespace {

std::set<std::string> Digests(const std::vector<std::string>& tokens) {
  std::set<std::string> out;
  for (const auto& t : tokens) out.insert(Sha256Hex(t));
  return out;
}

}  // namespace

Result<std::vector<std::string>> ReadTokenLines(const std::string& path) {
  std::ifstream in(path);
  if (!in) return IoError("cannot read " + path);
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty() || line.front() == '#') continue;
    if (line.size() < 16) return InvalidArgument(path + ": a token has at least 16 characters");
    out.push_back(line);
  }
  return out;
}

Result<std::vector<NodeCredentialRecord>> ReadLegacyCredentialFile(const std::string& path) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec))
    return std::vector<NodeCredentialRecord>{};
  std::ifstream in(path);
  if (!in) return IoError("cannot read " + path);
  std::map<std::string, std::string> last;
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // a line cut short by a crash mid-write: never acknowledged
    std::istringstream fields(line);
    std::string node, digest;
    if (!(fields >> node >> digest) || digest.size() != 64) {
      if (line.empty()) continue;
      return InvalidArgument(path + ": expected 'node digest', got '" + line + "'");
    }
    last[node] = digest;
  }
  std::vector<NodeCredentialRecord> out;
  for (auto& [node, digest] : last) out.push_back({node, std::move(digest)});
  return out;
}

NodeCredentials::NodeCredentials(const std::vector<std::string>& bootstrap_tokens)
    : bootstrap_digests_(Digests(bootstrap_tokens)) {}

Status NodeCredentials::Attach(Store& store, const std::string& legacy_file) {
  auto stored = store.LoadNodeCredentials();
  if (!stored) return std::unexpected(stored.error());
  auto legacy = ReadLegacyCredentialFile(legacy_file);
  if (!legacy) return std::unexpected(legacy.error());
  std::lock_guard lock(mu_);
  store_ = &store;
  digest_of_node_.clear();
  nodes_of_digest_.clear();
  for (const auto& c : *stored) BindLocked(c.node, c.digest);
  Change imported;
  for (auto& c : *legacy) {
    if (!digest_of_node_.contains(c.node)) imported.put_node_credentials.push_back(std::move(c));
  }
  if (imported.empty()) return {};
  if (auto committed = store.Commit(imported); !committed)
    return std::unexpected(committed.error());
  for (const auto& c : imported.put_node_credentials) BindLocked(c.node, c.digest);
  return {};
}

void NodeCredentials::Detach() {
  std::lock_guard lock(mu_);
  store_ = nullptr;
  digest_of_node_.clear();
  nodes_of_digest_.clear();
}

bool NodeCredentials::IsBootstrapToken(std::string_view token) const {
  return !token.empty() && bootstrap_digests_.contains(Sha256Hex(token));
}

std::set<std::string> NodeCredentials::NodesOf(std::string_view secret) const {
  if (secret.empty()) return {};
  const std::string digest = Sha256Hex(secret);
  std::lock_guard lock(mu_);
  auto it = nodes_of_digest_.find(digest);
  return it == nodes_of_digest_.end() ? std::set<std::string>{} : it->second;
}

bool NodeCredentials::HasCredential(const std::string& node) const {
  std::lock_guard lock(mu_);
  return digest_of_node_.contains(node);
}

void NodeCredentials::BindLocked(const std::string& node, const std::string& digest) {
  if (auto old = digest_of_node_.find(node); old != digest_of_node_.end()) {
    nodes_of_digest_[old->second].erase(node);
    if (nodes_of_digest_[old->second].empty()) nodes_of_digest_.erase(old->second);
  }
  digest_of_node_[node] = digest;
  nodes_of_digest_[digest].insert(node);
}

Status NodeCredentials::Bind(const std::string& node, std::string_view secret) {
  const std::string digest = Sha256Hex(secret);
  std::lock_guard lock(mu_);
  if (auto it = digest_of_node_.find(node); it != digest_of_node_.end() && it->second == digest)
    return {};
  if (store_ == nullptr)
    return FailedPrecondition("cannot record the credential of " + node + ": not serving");
  Change change;
  change.put_node_credentials.push_back({node, digest});
  if (auto committed = store_->Commit(change); !committed) {
    return IoError("cannot record the credential of " + node + ": " + committed.error().message);
  }
  BindLocked(node, digest);
  return {};
}

Status NodeCredentials::BindAll(const std::vector<std::string>& nodes, std::string_view secret) {
  const std::string digest = Sha256Hex(secret);
  std::lock_guard lock(mu_);
  Change change;
  for (const auto& node : nodes) {
    auto it = digest_of_node_.find(node);
    if (it == digest_of_node_.end() || it->second != digest)
      change.put_node_credentials.push_back({node, digest});
  }
  if (change.put_node_credentials.empty()) return {};
  if (store_ == nullptr)
    return FailedPrecondition("cannot record the nodes' credential: not serving");
  if (auto committed = store_->Commit(change); !committed) {
    return IoError("cannot record the credential of " + std::to_string(nodes.size()) +
                   " nodes: " + committed.error().message);
  }
  for (const auto& c : change.put_node_credentials) BindLocked(c.node, c.digest);
  return {};
}

}  // namespace tessera
