// Cluster specs in YAML (or JSON): named topology levels and pools of identical nodes, each
// pool laid out over the levels by its fanout. The form is documented in docs/cluster-spec.md.
// Errors are "FILE:LINE:COLUMN: KEY.PATH: reason"; yaml-cpp's exceptions stop here.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <fstream>
#include <set>
#include <sstream>

#include "sim/cluster_formats.h"
#include "sim/cluster_spec.h"
#include "sim/trace/csv_row.h"
#include "sim/trace/csv_table.h"

namespace tessera {
namespace {

constexpr std::int64_t kMaxYamlBytes = 16 << 20;  // a cluster spec is a few KiB
constexpr double kMaxCpuCoresPerNode = 100'000;
constexpr double kMaxMemoryGiBPerNode = 1 << 20;  // 1 PiB

struct Pool {
  std::string name;
  std::int64_t count = 0;
  int gpus = 0;
  std::string model;
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;
  std::vector<std::int64_t> fanout;  // per topology level, outermost first
};

// Makes located errors for one YAML document.
class YamlContext {
 public:
  explicit YamlContext(std::string_view source) : source_(source) {}

  std::unexpected<Error> Fail(const YAML::Node& at, std::string_view key,
                              std::string_view reason) const {
    return InvalidArgument(Where(at.Mark()) + std::string(key) + ": " + std::string(reason));
  }
  std::string Where(const YAML::Mark& mark) const {
    if (mark.is_null() || mark.line < 0) return std::string(source_) + ": ";
    return std::string(source_) + ":" + std::to_string(mark.line + 1) + ":" +
           std::to_string(mark.column + 1) + ": ";
  }
  std::string_view source() const { return source_; }

  // Checks that `map` is a mapping whose keys are all in `known`, each given once.
  Status CheckKeys(const YAML::Node& map, std::string_view path,
                   std::initializer_list<std::string_view> known) const {
    if (!map.IsMap()) return Fail(map, path, "expected a mapping (key: value lines)");
    std::set<std::string> seen;
    for (const auto& entry : map) {
      // A copy: yaml-cpp's iterators hand out proxies that die with the full expression.
      const YAML::Node key = entry.first;
      const std::string name = key.IsScalar() ? key.Scalar() : std::string("?");
      const std::string key_path = Join(path, name);
      if (!seen.insert(name).second) return Fail(key, key_path, "given twice");
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        std::string list;
        for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
        std::string hint;
        if (name.find("Per") != std::string::npos) {
          hint = "; domain sizes go under fanout, e.g. fanout: {spine: 8, leaf: 32}";
        }
        return Fail(key, key_path, "unknown key (known: " + list + ")" + hint);
      }
    }
    return {};
  }

  Result<std::int64_t> Int(const YAML::Node& node, std::string_view path, std::int64_t min,
                           std::int64_t max) const {
    if (!node.IsScalar()) return Fail(node, path, "expected a whole number");
    auto value = ParseWholeNumber(node.Scalar());
    if (!value) return Fail(node, path, value.error());
    if (*value < min || *value > max) {
      return Fail(node, path,
                  "must be " + std::to_string(min) + ".." + std::to_string(max) + ", got " +
                      std::to_string(*value));
    }
    return *value;
  }

  Result<double> Number(const YAML::Node& node, std::string_view path, double max) const {
    if (!node.IsScalar()) return Fail(node, path, "expected a number");
    auto value = ParseNumber(node.Scalar());
    if (!value) return Fail(node, path, value.error());
    if (*value <= 0) return Fail(node, path, "must be greater than 0, got " + node.Scalar());
    if (*value > max) return Fail(node, path, "'" + node.Scalar() + "' is too large");
    return *value;
  }

  Result<std::string> Name(const YAML::Node& node, std::string_view path) const {
    if (!node.IsScalar()) return Fail(node, path, "expected a name");
    const std::string& s = node.Scalar();
    if (!IsValidClusterName(s)) {
      return Fail(node, path, "'" + Printable(s) + "' must be 1-63 letters, digits or . _ + -");
    }
    return s;
  }

  static std::string Join(std::string_view path, std::string_view key) {
    return path.empty() ? std::string(key) : std::string(path) + "." + std::string(key);
  }

 private:
  std::string_view source_;
};

Result<std::vector<std::string>> ParseLevels(const YamlContext& ctx, const YAML::Node& topology) {
  std::vector<std::string> levels;
  if (!topology) return levels;
  if (auto ok = ctx.CheckKeys(topology, "topology", {"levels"}); !ok) {
    return std::unexpected(ok.error());
  }
  const YAML::Node list = topology["levels"];
  if (!list || list.IsNull()) return levels;
  if (!list.IsSequence()) {
    return ctx.Fail(list, "topology.levels", "expected a list of level names, e.g. [spine, leaf]");
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = "topology.levels[" + std::to_string(i) + "]";
    TRACE_ASSIGN_OR_RETURN(std::string level, ctx.Name(list[i], path));
    if (level == "node" || level == "gpu") {
      return ctx.Fail(list[i], path, "'" + level + "' is implicit below the named levels");
    }
    if (std::find(levels.begin(), levels.end(), level) != levels.end()) {
      return ctx.Fail(list[i], path, "level '" + level + "' given twice");
    }
    levels.push_back(std::move(level));
  }
  return levels;
}

Result<Pool> ParsePool(const YamlContext& ctx, const YAML::Node& node, std::size_t index,
                       const std::vector<std::string>& levels) {
  const std::string path = "pools[" + std::to_string(index) + "]";
  if (auto ok = ctx.CheckKeys(
          node, path, {"name", "count", "gpus", "model", "cpuCores", "memoryGiB", "fanout"});
      !ok) {
    return std::unexpected(ok.error());
  }
  auto required = [&](std::string_view key) -> Result<YAML::Node> {
    YAML::Node value = node[std::string(key)];
    if (!value || value.IsNull())
      return ctx.Fail(node, path, "missing key '" + std::string(key) + "'");
    return value;
  };
  Pool pool;
  pool.name = "pool" + std::to_string(index);
  if (node["name"]) {
    TRACE_ASSIGN_OR_RETURN(pool.name, ctx.Name(node["name"], path + ".name"));
  }
  TRACE_ASSIGN_OR_RETURN(const YAML::Node count, required("count"));
  TRACE_ASSIGN_OR_RETURN(pool.count, ctx.Int(count, path + ".count", 1, kMaxClusterNodes));
  TRACE_ASSIGN_OR_RETURN(const YAML::Node gpus, required("gpus"));
  TRACE_ASSIGN_OR_RETURN(const std::int64_t g, ctx.Int(gpus, path + ".gpus", 0, kMaxGpusPerNode));
  pool.gpus = static_cast<int>(g);
  if (pool.gpus > 0) {
    TRACE_ASSIGN_OR_RETURN(const YAML::Node model, required("model"));
    TRACE_ASSIGN_OR_RETURN(pool.model, ctx.Name(model, path + ".model"));
  } else if (node["model"]) {
    return ctx.Fail(node["model"], path + ".model", "a pool without GPUs has no GPU model");
  }
  // CPU and memory default in proportion to the GPUs, as in the short form; a CPU-only pool
  // has nothing to be proportional to, so it must say.
  if (node["cpuCores"] || pool.gpus == 0) {
    TRACE_ASSIGN_OR_RETURN(const YAML::Node cpu, required("cpuCores"));
    TRACE_ASSIGN_OR_RETURN(const double cores,
                           ctx.Number(cpu, path + ".cpuCores", kMaxCpuCoresPerNode));
    pool.cpu_milli = std::llround(cores * 1000);
  } else {
    pool.cpu_milli = pool.gpus * kDefaultCpuMilliPerGpu;
  }
  if (node["memoryGiB"] || pool.gpus == 0) {
    TRACE_ASSIGN_OR_RETURN(const YAML::Node mem, required("memoryGiB"));
    TRACE_ASSIGN_OR_RETURN(const double gib,
                           ctx.Number(mem, path + ".memoryGiB", kMaxMemoryGiBPerNode));
    pool.memory_mib = std::llround(gib * 1024);
  } else {
    pool.memory_mib = pool.gpus * kDefaultMemoryMibPerGpu;
  }

  const YAML::Node fanout = node["fanout"];
  if (levels.empty()) {
    if (fanout) {
      return ctx.Fail(fanout, path + ".fanout", "given, but topology.levels names no levels");
    }
    return pool;
  }
  std::string level_list;
  for (const auto& l : levels) level_list += (level_list.empty() ? "" : ", ") + l;
  if (!fanout) {
    return ctx.Fail(node, path,
                    "missing key 'fanout' (one entry per topology level: " + level_list + ")");
  }
  if (!fanout.IsMap()) {
    return ctx.Fail(fanout, path + ".fanout",
                    "expected a mapping of level to size, e.g. {" + levels.back() + ": 32}");
  }
  std::set<std::string> seen;
  for (const auto& entry : fanout) {
    const YAML::Node key_node = entry.first;
    const std::string key = key_node.IsScalar() ? key_node.Scalar() : "?";
    if (std::find(levels.begin(), levels.end(), key) == levels.end()) {
      return ctx.Fail(key_node, path + ".fanout." + key,
                      "not a topology level (levels: " + level_list + ")");
    }
    if (!seen.insert(key).second) return ctx.Fail(key_node, path + ".fanout." + key, "given twice");
  }
  for (const auto& level : levels) {
    const YAML::Node size = fanout[level];
    if (!size) {
      return ctx.Fail(fanout, path + ".fanout", "missing level '" + level + "'");
    }
    TRACE_ASSIGN_OR_RETURN(const std::int64_t n,
                           ctx.Int(size, path + ".fanout." + level, 1, kMaxClusterNodes));
    pool.fanout.push_back(n);
  }
  return pool;
}

// Lays the pools out over the levels: each pool opens new domains at every level (pools do
// not share a leaf or a spine), node j of a pool sits in leaf j / fanout[leaf], that leaf in
// spine (j / fanout[leaf]) / fanout[spine], and so on outwards.
Result<Cluster> BuildCluster(const YamlContext& ctx, const YAML::Node& pools_node,
                             const std::vector<Pool>& pools, std::vector<std::string> levels) {
  Cluster cluster;
  Topology topology;
  topology.levels = std::move(levels);
  const std::size_t depth = topology.levels.size();
  topology.domain_names.resize(depth);
  std::vector<std::int64_t> index(depth);
  for (std::size_t p = 0; p < pools.size(); ++p) {
    const Pool& pool = pools[p];
    std::vector<std::uint32_t> base(depth);
    for (std::size_t l = 0; l < depth; ++l) {
      base[l] = static_cast<std::uint32_t>(topology.domain_names[l].size());
    }
    for (std::int64_t j = 0; j < pool.count; ++j) {
      std::int64_t inner = j;
      for (std::size_t l = depth; l-- > 0;) {
        inner /= pool.fanout[l];
        index[l] = inner;
      }
      std::vector<std::uint32_t> domain(depth);
      for (std::size_t l = 0; l < depth; ++l) {
        domain[l] = base[l] + static_cast<std::uint32_t>(index[l]);
        auto& names = topology.domain_names[l];
        if (domain[l] == names.size()) {
          names.push_back(topology.levels[l] + "-" + std::to_string(domain[l]));
        }
      }
      auto added = cluster.AddNode(NumberedName(pool.name, j, pool.count), pool.model, pool.gpus,
                                   pool.cpu_milli, pool.memory_mib, std::move(domain));
      if (!added) {
        return ctx.Fail(pools_node[p], "pools[" + std::to_string(p) + "]", added.error().message);
      }
    }
  }
  cluster.set_topology(std::move(topology));
  return cluster;
}

Result<Cluster> ParseDocument(const YamlContext& ctx, const YAML::Node& root) {
  if (!root || root.IsNull()) {
    return InvalidArgument(std::string(ctx.source()) + ": empty cluster spec");
  }
  if (!root.IsMap()) {
    return ctx.Fail(root, "(top level)", "expected a mapping with keys topology and pools");
  }
  if (auto ok = ctx.CheckKeys(root, "", {"name", "topology", "pools"}); !ok) {
    return std::unexpected(ok.error());
  }
  TRACE_ASSIGN_OR_RETURN(std::vector<std::string> levels, ParseLevels(ctx, root["topology"]));
  const YAML::Node pools_node = root["pools"];
  if (!pools_node) return ctx.Fail(root, "(top level)", "missing key 'pools'");
  if (!pools_node.IsSequence() || pools_node.size() == 0) {
    return ctx.Fail(pools_node, "pools", "expected a non-empty list of node pools");
  }
  std::vector<Pool> pools;
  std::set<std::string> names;
  std::int64_t total = 0;
  for (std::size_t i = 0; i < pools_node.size(); ++i) {
    TRACE_ASSIGN_OR_RETURN(Pool pool, ParsePool(ctx, pools_node[i], i, levels));
    const std::string path = "pools[" + std::to_string(i) + "]";
    if (!names.insert(pool.name).second) {
      return ctx.Fail(pools_node[i], path + ".name",
                      "pool name '" + pool.name + "' given twice (node names would clash)");
    }
    total += pool.count;
    if (total > kMaxClusterNodes) {
      return ctx.Fail(pools_node[i], path + ".count",
                      "more than " + std::to_string(kMaxClusterNodes) + " nodes in all");
    }
    pools.push_back(std::move(pool));
  }
  return BuildCluster(ctx, pools_node, pools, std::move(levels));
}

}  // namespace

Result<Cluster> ParseClusterYaml(std::string_view text, std::string_view source) {
  const YamlContext ctx(source);
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    return ParseDocument(ctx, root);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(ctx.Where(e.mark) + "not valid YAML: " + e.msg);
  } catch (const std::exception& e) {
    return Internal(std::string(source) + ": reading the cluster spec failed: " + e.what());
  }
}

Result<Cluster> LoadClusterYaml(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError(path + ": cannot open");
  std::string text;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(in.gcount()));
    if (static_cast<std::int64_t>(text.size()) > kMaxYamlBytes) {
      return InvalidArgument(path + ": larger than " + std::to_string(kMaxYamlBytes >> 20) +
                             " MiB; not a cluster spec");
    }
  }
  if (in.bad()) return IoError(path + ": read error");
  if (!IsValidUtf8(text)) return InvalidArgument(path + ": not UTF-8 text");
  return ParseClusterYaml(text, path);
}

}  // namespace tessera
