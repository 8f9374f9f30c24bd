#include "spec/topology_file.h"

#include <fstream>
#include <set>
#include <sstream>

#include "spec/document.h"

namespace tessera {

namespace {

using Json = nlohmann::json;

bool ValidNodeName(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return s.front() != '-' && s.back() != '-';
}

Result<std::map<std::string, std::string>> PlaceOf(const Json& v, const std::string& field) {
  if (!v.is_object()) return InvalidArgument(field + ": must be a mapping of LEVEL: DOMAIN");
  std::map<std::string, std::string> out;
  for (const auto& [level, domain] : v.items()) {
    if (!domain.is_string() || domain.get<std::string>().empty()) {
      return InvalidArgument(field + "." + level + ": must be a non-empty string (the domain)");
    }
    out[level] = domain.get<std::string>();
  }
  return out;
}

Status CheckKeys(const Json& v, const std::string& field, const std::set<std::string>& known) {
  for (const auto& [key, value] : v.items()) {
    if (!known.contains(key))
      return InvalidArgument((field.empty() ? key : field + "." + key) + ": unknown field");
  }
  return {};
}

Result<TopologyFileNode> NodeOf(const Json& v, const std::string& field) {
  if (!v.is_object()) return InvalidArgument(field + ": must be a mapping");
  if (auto s = CheckKeys(v, field, {"name", "gpus", "topology"}); !s)
    return std::unexpected(s.error());
  TopologyFileNode node;
  if (!v.contains("name") || !v["name"].is_string() || !ValidNodeName(v["name"])) {
    return InvalidArgument(field + ".name: required, [a-z0-9-], 1..63 characters");
  }
  node.name = v["name"];
  if (v.contains("gpus")) {
    if (!v["gpus"].is_string())
      return InvalidArgument(field + ".gpus: must be a string like 8xH100");
    node.gpus = v["gpus"];
  }
  if (v.contains("topology")) {
    auto place = PlaceOf(v["topology"], field + ".topology");
    if (!place) return std::unexpected(place.error());
    node.topology = std::move(*place);
  }
  return node;
}

}  // namespace

Result<TopologyFile> ParseTopologyFile(std::string_view text, const std::string& source) {
  auto fail = [&](const Error& e) { return InvalidArgument(source + ": " + e.message); };
  auto doc = ParseDocument(text);
  if (!doc) return fail(doc.error());
  if (!doc->is_object()) return InvalidArgument(source + ": must be a mapping");
  if (auto s = CheckKeys(*doc, "", {"topology", "nodes"}); !s) return fail(s.error());
  TopologyFile file;
  if (doc->contains("topology")) {
    auto place = PlaceOf((*doc)["topology"], "topology");
    if (!place) return fail(place.error());
    file.topology = std::move(*place);
  }
  if (doc->contains("nodes")) {
    const Json& nodes = (*doc)["nodes"];
    if (!nodes.is_array()) return InvalidArgument(source + ": nodes: must be a list");
    std::set<std::string> names;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const std::string field = "nodes[" + std::to_string(i) + "]";
      auto node = NodeOf(nodes[i], field);
      if (!node) return fail(node.error());
      if (!names.insert(node->name).second)
        return InvalidArgument(source + ": " + field + ".name: '" + node->name + "' given twice");
      file.nodes.push_back(std::move(*node));
    }
  }
  if (file.topology.empty() && file.nodes.empty())
    return InvalidArgument(source + ": give topology or nodes");
  return file;
}

Result<TopologyFile> ReadTopologyFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return InvalidArgument("--topology-file: cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseTopologyFile(ss.str(), path);
}

std::string TopologyFileText(const TopologyFile& file) {
  Json out = Json::object();
  if (!file.topology.empty()) out["topology"] = file.topology;
  if (!file.nodes.empty()) {
    Json nodes = Json::array();
    for (const auto& n : file.nodes) {
      Json j = {{"name", n.name}};
      if (!n.gpus.empty()) j["gpus"] = n.gpus;
      if (!n.topology.empty()) j["topology"] = n.topology;
      nodes.push_back(std::move(j));
    }
    out["nodes"] = std::move(nodes);
  }
  return DumpJson(out, 2) + "\n";
}

}  // namespace tessera
