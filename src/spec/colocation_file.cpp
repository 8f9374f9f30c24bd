#include "spec/colocation_file.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

namespace tessera {

namespace {

std::unexpected<Error> Fail(std::string_view source, const YAML::Node& at, std::string_view key,
                            std::string_view reason) {
  std::string where(source);
  const YAML::Mark mark = at.Mark();
  if (!mark.is_null() && mark.line >= 0) where += ":" + std::to_string(mark.line + 1);
  return InvalidArgument(where + ": " + std::string(key) + ": " + std::string(reason));
}

std::optional<double> Number(const YAML::Node& n) {
  if (!n.IsScalar()) return std::nullopt;
  const std::string& s = n.Scalar();
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

Result<std::vector<WorkloadKind>> Kinds(std::string_view source, const YAML::Node& n,
                                        const std::string& key) {
  if (!n.IsSequence()) return Fail(source, n, key, "expected a list of kinds, e.g. [BatchJob]");
  std::vector<WorkloadKind> kinds;
  for (const auto& item : n) {
    WorkloadKind k;
    if (!item.IsScalar() || !ParseKind(item.Scalar(), &k)) {
      return Fail(
          source, item, key,
          "'" + (item.IsScalar() ? item.Scalar() : std::string("?")) +
              "' is not a kind (TrainingJob, InferenceService, BatchJob, DevSession, RLJob)");
    }
    kinds.push_back(k);
  }
  return kinds;
}

Result<ColocationConfig> FromYaml(const YAML::Node& root, std::string_view source) {
  if (!root.IsMap() || !root["colocation"]) {
    return Fail(source, root, "colocation", "missing: expected a 'colocation:' mapping");
  }
  const YAML::Node c = root["colocation"];
  for (const auto& entry : root) {
    const YAML::Node key = entry.first;
    if (key.Scalar() != "colocation")
      return Fail(source, key, key.Scalar(), "unknown key (known: colocation)");
  }
  if (!c.IsMap()) return Fail(source, c, "colocation", "expected a mapping (key: value lines)");
  ColocationConfig config;
  config.enabled = true;
  const std::set<std::string> known = {"oversell", "online", "offline", "evictionCostSeconds"};
  for (const auto& entry : c) {
    const YAML::Node key = entry.first;
    const YAML::Node value = entry.second;
    const std::string name = key.IsScalar() ? key.Scalar() : "?";
    const std::string field = "colocation." + name;
    if (!known.contains(name)) {
      return Fail(source, key, field,
                  "unknown key (known: oversell, online, offline, evictionCostSeconds)");
    }
    if (name == "oversell") {
      const auto v = Number(value);
      if (!v || *v < 0 || *v > 1) {
        return Fail(source, value, field,
                    "must be a number between 0 and 1 (a share of online replicas' unused GPU), "
                    "got '" +
                        (value.IsScalar() ? value.Scalar() : std::string("?")) + "'");
      }
      config.oversell_permille = static_cast<std::int32_t>(std::lround(*v * 1000));
    } else if (name == "evictionCostSeconds") {
      const auto v = Number(value);
      if (!v || *v < 0) {
        return Fail(source, value, field,
                    "must be a number of seconds >= 0, got '" +
                        (value.IsScalar() ? value.Scalar() : std::string("?")) + "'");
      }
      config.eviction_cost = FromSeconds(*v);
    } else {
      auto kinds = Kinds(source, value, field);
      if (!kinds) return std::unexpected(kinds.error());
      (name == "online" ? config.online : config.offline) = std::move(*kinds);
    }
  }
  if (auto ok = ValidateColocationConfig(config); !ok) {
    // The message is "KEY: reason"; point at that key's line when the file has it.
    const std::string& m = ok.error().message;
    const std::string key = m.substr(0, m.find(':'));
    const YAML::Node at = c[key] ? c[key] : c;
    return Fail(source, at, "colocation." + key, m.substr(m.find(':') + 2));
  }
  return config;
}

}  // namespace

Result<ColocationConfig> ParseColocationConfigYaml(std::string_view text, std::string_view source) {
  try {
    return FromYaml(YAML::Load(std::string(text)), source);
  } catch (const YAML::Exception& e) {
    std::string where(source);
    if (!e.mark.is_null()) where += ":" + std::to_string(e.mark.line + 1);
    return InvalidArgument(where + ": (yaml): " + e.msg);
  }
}

Result<ColocationConfig> LoadColocationConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError(path + ": cannot open the co-location config");
  std::ostringstream text;
  text << in.rdbuf();
  return ParseColocationConfigYaml(text.str(), path);
}

}  // namespace tessera
