// Users' bearer tokens, read from a file in the shape of kube-apiserver's --token-auth-file:
// one user per line, `token,user,uid,"group1,group2"` (the groups field optional, quoted when
// it holds several). Blank lines and lines starting with '#' are skipped. Only SHA-256 digests
// of the tokens are kept in memory.
//
// Thread-safety: a TokenTable is immutable after Parse/Load; lookups are thread-safe.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tessera {

struct UserIdentity {
  std::string user;
  std::string uid;
  std::vector<std::string> groups;
};

class TokenTable {
 public:
  // Errors name the source and line: "tokens.csv:3: user: must not be empty".
  static Result<TokenTable> Parse(std::string_view text, const std::string& source);
  static Result<TokenTable> Load(const std::string& path);

  // The user of `token`, or nullptr for an unknown token.
  const UserIdentity* Find(std::string_view token) const;
  std::size_t size() const { return by_digest_.size(); }

 private:
  std::map<std::string, UserIdentity> by_digest_;  // SHA-256 hex of the token -> user
};

// One line of a token file, groups quoted: `token,user,uid,"g1,g2"`.
std::string TokenFileLine(const std::string& token, const UserIdentity& identity);

}  // namespace tessera
