#include "cli/up_credentials.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "cli/context_file.h"
#include "server/auth_tokens.h"
#include "server/secrets.h"

namespace tessera::cli {

namespace {

std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// The token in `path`, made when the file is missing or empty.
Result<std::string> TokenIn(const std::string& path) {
  if (std::string t = FirstLine(path); t.size() >= 16) return t;
  auto fresh = RandomSecret();
  if (!fresh) return std::unexpected(fresh.error());
  if (auto s = WritePrivateFile(path, *fresh + "\n"); !s) return std::unexpected(s.error());
  return *fresh;
}

}  // namespace

Result<UpCredentials> EnsureUpCredentials(const std::string& state) {
  const std::string dir = state + "/auth";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return IoError("cannot create " + dir + ": " + ec.message());
  ::chmod(dir.c_str(), 0700);
  struct Identity {
    const char* file;
    const char* user;
    const char* group;
  };
  const Identity identities[] = {{"admin.token", "admin", "tessera:admins"},
                                 {"metrics.token", "metrics", "tessera:metrics"},
                                 {"gateway.token", "gateway", "tessera:gateway"}};
  UpCredentials out;
  std::string csv = "# token,user,uid,\"groups\" (kube-apiserver --token-auth-file shape)\n";
  for (const auto& id : identities) {
    auto token = TokenIn(dir + "/" + id.file);
    if (!token) return std::unexpected(token.error());
    csv += TokenFileLine(*token, UserIdentity{id.user, id.user, {id.group}});
    if (std::string(id.user) == "admin") out.admin_token = *token;
  }
  // Users added to tokens.csv by hand stay: only the lines of these identities are rewritten.
  for (std::ifstream in(dir + "/tokens.csv"); in;) {
    std::string line;
    if (!std::getline(in, line)) break;
    const auto first = line.find(',');
    const auto second = first == std::string::npos ? first : line.find(',', first + 1);
    const std::string user =
        second == std::string::npos ? "" : line.substr(first + 1, second - first - 1);
    if (line.empty() || line.front() == '#' || user == "admin" || user == "metrics" ||
        user == "gateway")
      continue;
    csv += line + "\n";
  }
  out.token_file = dir + "/tokens.csv";
  if (auto s = WritePrivateFile(out.token_file, csv); !s) return std::unexpected(s.error());
  out.bootstrap_file = dir + "/bootstrap.token";
  if (auto t = TokenIn(out.bootstrap_file); !t) return std::unexpected(t.error());
  out.admin_token_file = dir + "/admin.token";
  return out;
}

Status WriteContext(const std::string& state, const std::string& server, const std::string& ca_file,
                    const std::string& token_file) {
  return WritePrivateFile(state + "/tessera.config", ContextFileText(server, ca_file, token_file));
}

}  // namespace tessera::cli
