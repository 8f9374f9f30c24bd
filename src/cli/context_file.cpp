#include "cli/context_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "spec/document.h"

namespace tessera::cli {

namespace {

using Json = nlohmann::json;

// The entry named `name` of the list `key` (its `inner` object), or an error.
Result<Json> Entry(const Json& doc, const std::string& key, const std::string& inner,
                   const std::string& name, const std::string& where) {
  if (!doc.contains(key) || !doc[key].is_array()) {
    return InvalidArgument(where + ": " + key + ": expected a list");
  }
  for (const auto& e : doc[key]) {
    if (e.is_object() && e.value("name", "") == name) {
      if (!e.contains(inner) || !e[inner].is_object()) {
        return InvalidArgument(where + ": " + key + "[" + name + "]." + inner +
                               ": expected an object");
      }
      return e[inner];
    }
  }
  return InvalidArgument(where + ": " + key + ": no entry named '" + name + "'");
}

std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

}  // namespace

Result<ClusterAccess> ReadContextFile(const std::string& path, const std::string& context) {
  std::ifstream in(path);
  if (!in) return IoError("cannot read the context file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto doc = ParseDocument(ss.str());
  if (!doc) return InvalidArgument(path + ": " + doc.error().message);
  if (!doc->is_object()) return InvalidArgument(path + ": expected a mapping");
  const std::string name = context.empty() ? doc->value("current-context", "") : context;
  if (name.empty()) return InvalidArgument(path + ": current-context: not set");
  auto ctx = Entry(*doc, "contexts", "context", name, path);
  if (!ctx) return std::unexpected(ctx.error());
  auto cluster = Entry(*doc, "clusters", "cluster", ctx->value("cluster", ""), path);
  if (!cluster) return std::unexpected(cluster.error());
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  auto resolve = [&](const std::string& p) {
    return p.empty() || p.front() == '/' ? p : (dir / p).string();
  };
  ClusterAccess access;
  access.server = cluster->value("server", "");
  access.ca_file = resolve(cluster->value("certificate-authority", ""));
  if (const std::string user_name = ctx->value("user", ""); !user_name.empty()) {
    auto user = Entry(*doc, "users", "user", user_name, path);
    if (!user) return std::unexpected(user.error());
    access.token = user->value("token", "");
    if (access.token.empty() && user->contains("tokenFile")) {
      const std::string file = resolve(user->value("tokenFile", ""));
      access.token = FirstLine(file);
      if (access.token.empty()) return InvalidArgument(path + ": tokenFile " + file + " is empty");
    }
  }
  return access;
}

std::string ContextFileText(const std::string& server, const std::string& ca_file,
                            const std::string& token_file) {
  Json cluster = {{"server", server}};
  if (!ca_file.empty()) cluster["certificate-authority"] = ca_file;
  Json user = Json::object();
  if (!token_file.empty()) user["tokenFile"] = token_file;
  const Json doc = {
      {"apiVersion", "tessera/v1"},
      {"kind", "Config"},
      {"current-context", "local"},
      {"clusters", Json::array({{{"name", "local"}, {"cluster", cluster}}})},
      {"users", Json::array({{{"name", "admin"}, {"user", user}}})},
      {"contexts",
       Json::array({{{"name", "local"}, {"context", {{"cluster", "local"}, {"user", "admin"}}}}})}};
  return ToYaml(doc);
}

}  // namespace tessera::cli
