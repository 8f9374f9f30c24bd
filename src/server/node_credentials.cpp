#include "server/node_credentials.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "server/secrets.h"

namespace tessera {

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

Result<std::unique_ptr<NodeCredentials>> NodeCredentials::Open(
    const std::string& path, const std::vector<std::string>& bootstrap_tokens) {
  std::set<std::string> digests;
  for (const auto& t : bootstrap_tokens) digests.insert(Sha256Hex(t));
  std::unique_ptr<NodeCredentials> creds(new NodeCredentials(path, std::move(digests)));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return IoError("cannot open " + path + ": " + std::strerror(errno));
  ::fchmod(fd, 0600);
  ::close(fd);
  std::lock_guard lock(creds->mu_);
  if (auto s = creds->CatchUpLocked(); !s) return std::unexpected(s.error());
  return creds;
}

// The lines appended since the last read (by this controller, or by another one sharing the
// state directory: an etcd standby that took over knows the nodes the old leader admitted).
Status NodeCredentials::CatchUpLocked() const {
  std::ifstream in(path_);
  if (!in) return IoError("cannot read " + path_);
  in.seekg(static_cast<std::streamoff>(read_bytes_));
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // a line still being written: read it next time
    read_bytes_ += line.size() + 1;
    std::istringstream fields(line);
    std::string node, digest;
    if (!(fields >> node >> digest) || digest.size() != 64) {
      if (line.empty()) continue;
      return InvalidArgument(path_ + ": expected 'node digest', got '" + line + "'");
    }
    BindLocked(node, digest);
  }
  return {};
}

bool NodeCredentials::IsBootstrapToken(std::string_view token) const {
  return !token.empty() && bootstrap_digests_.contains(Sha256Hex(token));
}

std::set<std::string> NodeCredentials::NodesOf(std::string_view secret) const {
  if (secret.empty()) return {};
  const std::string digest = Sha256Hex(secret);
  std::lock_guard lock(mu_);
  auto it = nodes_of_digest_.find(digest);
  if (it == nodes_of_digest_.end()) {
    (void)CatchUpLocked();
    it = nodes_of_digest_.find(digest);
  }
  return it == nodes_of_digest_.end() ? std::set<std::string>{} : it->second;
}

bool NodeCredentials::HasCredential(const std::string& node) const {
  std::lock_guard lock(mu_);
  if (!digest_of_node_.contains(node)) (void)CatchUpLocked();
  return digest_of_node_.contains(node);
}

void NodeCredentials::BindLocked(const std::string& node, const std::string& digest) const {
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
  const std::string line = node + " " + digest + "\n";
  const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return IoError("cannot open " + path_ + ": " + std::strerror(errno));
  const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  const bool synced = written && ::fdatasync(fd) == 0;
  ::close(fd);
  if (!synced) return IoError("cannot record the credential of " + node + " in " + path_);
  BindLocked(node, digest);
  return {};
}

}  // namespace tessera
