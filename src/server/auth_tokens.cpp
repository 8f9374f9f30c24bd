#include "server/auth_tokens.h"

#include <fstream>
#include <sstream>

#include "server/secrets.h"

namespace tessera {

namespace {

// Splits one CSV line into fields; a field in double quotes may hold commas ("" is a quote).
Result<std::vector<std::string>> CsvFields(std::string_view line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back().push_back('"');
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back().push_back(c);
      }
    } else if (c == '"' && fields.back().empty()) {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back().push_back(c);
    }
  }
  if (quoted) return InvalidArgument("unterminated quote");
  return fields;
}

std::vector<std::string> SplitGroups(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string g;
  while (std::getline(in, g, ',')) {
    if (!g.empty()) out.push_back(g);
  }
  return out;
}

}  // namespace

Result<TokenTable> TokenTable::Parse(std::string_view text, const std::string& source) {
  TokenTable table;
  std::stringstream in{std::string(text)};
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line.front() == '#') continue;
    const std::string at = source + ":" + std::to_string(number) + ": ";
    auto fields = CsvFields(line);
    if (!fields) return InvalidArgument(at + fields.error().message);
    if (fields->size() < 3 || fields->size() > 4) {
      return InvalidArgument(at + "expected token,user,uid[,\"group1,group2\"], got " +
                             std::to_string(fields->size()) + " fields");
    }
    const std::string& token = (*fields)[0];
    if (token.size() < 16) return InvalidArgument(at + "token: at least 16 characters");
    UserIdentity id{(*fields)[1], (*fields)[2], {}};
    if (id.user.empty()) return InvalidArgument(at + "user: must not be empty");
    if (fields->size() == 4) id.groups = SplitGroups((*fields)[3]);
    if (!table.by_digest_.emplace(Sha256Hex(token), std::move(id)).second) {
      return InvalidArgument(at + "token: the same token appears twice");
    }
  }
  return table;
}

Result<TokenTable> TokenTable::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot read the token file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return Parse(ss.str(), path);
}

const UserIdentity* TokenTable::Find(std::string_view token) const {
  auto it = by_digest_.find(Sha256Hex(token));
  return it == by_digest_.end() ? nullptr : &it->second;
}

std::string TokenFileLine(const std::string& token, const UserIdentity& identity) {
  std::string groups;
  for (const auto& g : identity.groups) groups += (groups.empty() ? "" : ",") + g;
  return token + "," + identity.user + "," + identity.uid + ",\"" + groups + "\"\n";
}

}  // namespace tessera
