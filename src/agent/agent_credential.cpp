#include "agent/agent_credential.h"

#include <fcntl.h>
#include <httplib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace tessera {

namespace {

std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty() && line.front() != '#') return line;
  }
  return "";
}

}  // namespace

Status AgentCredential::Load(const std::string& state_dir, const std::string& bootstrap_token_file,
                             const std::string& ca_file) {
  std::lock_guard lock(mu_);
  path_ = state_dir + "/credential";
  secret_ = FirstLine(path_);
  ca_file_ = ca_file;
  if (!bootstrap_token_file.empty()) {
    bootstrap_ = FirstLine(bootstrap_token_file);
    if (bootstrap_.empty()) {
      return InvalidArgument("--bootstrap-token-file: no token in " + bootstrap_token_file);
    }
  }
  if (!ca_file_.empty() && ::access(ca_file_.c_str(), R_OK) != 0) {
    return InvalidArgument("--ca-file: cannot read " + ca_file_);
  }
  return {};
}

void AgentCredential::Apply(httplib::Client& client) const {
  std::lock_guard lock(mu_);
  if (!secret_.empty()) client.set_bearer_token_auth(secret_);
  if (!ca_file_.empty()) {
    client.set_ca_cert_path(ca_file_);
    client.enable_server_certificate_verification(true);
  }
}

void AgentCredential::ApplyForRegistration(httplib::Client& client) const {
  Apply(client);
  std::lock_guard lock(mu_);
  if (!bootstrap_.empty()) client.set_default_headers({{"X-Tessera-Bootstrap-Token", bootstrap_}});
}

Status AgentCredential::Keep(const std::string& secret) {
  std::lock_guard lock(mu_);
  if (secret == secret_) return {};
  const std::string tmp = path_ + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return IoError("cannot write " + tmp + ": " + std::strerror(errno));
  const std::string text = secret + "\n";
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                  ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || std::rename(tmp.c_str(), path_.c_str()) != 0) {
    return IoError("cannot keep the node credential in " + path_);
  }
  secret_ = secret;
  return {};
}

bool AgentCredential::has_credential() const {
  std::lock_guard lock(mu_);
  return !secret_.empty();
}

}  // namespace tessera
