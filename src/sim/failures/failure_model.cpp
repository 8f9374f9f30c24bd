// Failure model presets, the YAML loader and the failure generator (see failure_model.h).
// The numbers behind the presets are worked out in comments here and in docs/failures.md.
#include "sim/failures/failure_model.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <exception>
#include <fstream>
#include <set>
#include <sstream>

#include "core/rng.h"

namespace tessera {

std::string_view ComponentName(Component c) {
  switch (c) {
    case Component::kGpu:
      return "gpu";
    case Component::kHost:
      return "host";
    case Component::kNic:
      return "nic";
    case Component::kLeafSwitch:
      return "leaf_switch";
    case Component::kSoftware:
      return "software";
  }
  return "gpu";
}

std::optional<Component> ParseComponent(std::string_view name) {
  for (Component c : kAllComponents) {
    if (name == ComponentName(c)) return c;
  }
  if (name == "link") return Component::kNic;
  if (name == "switch" || name == "leaf") return Component::kLeafSwitch;
  return std::nullopt;
}

std::string ComponentList() {
  std::string s;
  for (Component c : kAllComponents) s += (s.empty() ? "" : ", ") + std::string(ComponentName(c));
  return s;
}

FailureUnit UnitOf(Component c) {
  switch (c) {
    case Component::kGpu:
      return FailureUnit::kGpu;
    case Component::kLeafSwitch:
      return FailureUnit::kLeaf;
    default:
      return FailureUnit::kNode;
  }
}

double FailureModel::JobFailuresPerHour(int nodes, int gpus_per_node, int leaves) const {
  double rate = 0;
  for (Component c : kAllComponents) {
    const double r = (*this)[c].rate_per_hour;
    switch (UnitOf(c)) {
      case FailureUnit::kGpu:
        rate += r * nodes * gpus_per_node;
        break;
      case FailureUnit::kNode:
        rate += r * nodes;
        break;
      case FailureUnit::kLeaf:
        rate += r * leaves;
        break;
    }
  }
  return rate;
}

namespace {

// The Llama 3 paper (Dubey et al. 2024, Table 5): 419 unexpected interruptions during a 54-day
// snapshot of pre-training on 16,384 H100 GPUs (2,048 nodes of 8). Exposure: 54 d × 24 h =
// 1,296 h, so 21,233,664 GPU-hours and 2,654,208 node-hours. Counts by our components:
//   gpu 268 = faulty GPU 148 + HBM3 72 + SRAM 19 + system processor 17 + silent data
//             corruption 6 + thermal interface/sensor 6
//   host 46 = unplanned host maintenance 32 + SSD 3 + power supply 3 + chassis 2 + IO
//             expansion board 2 + CPU 2 + system memory 2
//   nic  35 = NIC 7 + 28 of the 35 "network switch/cable" (we assume 80 % are cables and
//             optics, which take one node off the network)
//   leaf_switch 7 = the other 20 % of "network switch/cable", per leaf of 32 nodes (64 leaves)
//   software 63 = software bug 54 + NCCL watchdog timeout 7 + dependency 2
// 268 + 46 + 35 + 7 + 63 = 419. (The paper prints 30.1 % for the 148 faulty-GPU interruptions,
// which is 35.3 % of 419; we use the counts.)
constexpr double kLlamaHours = 54.0 * 24.0;
constexpr double kLlamaGpus = 16384;
constexpr double kLlamaNodes = kLlamaGpus / 8;
constexpr double kLlamaLeaves = kLlamaNodes / 32;

FailureModel Llama3() {
  FailureModel m;
  m.name = "llama3";
  // Repair times are our assumptions (docs/failures.md): a GPU or board swap with burn-in takes
  // about two days, a host fix (reimage, PSU, DIMM) a day, a cable or optic half a day, a leaf
  // switch a few hours; a software crash needs no repair.
  m[Component::kGpu] = {268 / (kLlamaHours * kLlamaGpus), 48};
  m[Component::kHost] = {46 / (kLlamaHours * kLlamaNodes), 24};
  m[Component::kNic] = {35 / (kLlamaHours * kLlamaNodes), 12};
  m[Component::kLeafSwitch] = {7 / (kLlamaHours * kLlamaLeaves), 4};
  m[Component::kSoftware] = {63 / (kLlamaHours * kLlamaNodes), 0};
  return m;
}

// Numbers from text: plain decimal or exponent notation, finite.
std::optional<double> ToNumber(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

class YamlErrors {
 public:
  explicit YamlErrors(std::string_view source) : source_(source) {}

  std::unexpected<Error> Fail(const YAML::Node& at, std::string_view field,
                              std::string_view reason) const {
    std::string where(source_);
    const YAML::Mark mark = at.Mark();
    if (!mark.is_null() && mark.line >= 0) {
      where += ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
    }
    return InvalidArgument(where + ": " + std::string(field) + ": " + std::string(reason));
  }

  Status CheckKeys(const YAML::Node& map, std::string_view path,
                   std::initializer_list<std::string_view> known) const {
    if (!map.IsMap()) return Fail(map, path, "expected a mapping (key: value lines)");
    std::set<std::string> seen;
    for (const auto& entry : map) {
      const YAML::Node key = entry.first;  // a copy: yaml-cpp's proxies die with the expression
      const std::string name = key.IsScalar() ? key.Scalar() : std::string("?");
      const std::string field = path.empty() ? name : std::string(path) + "." + name;
      if (!seen.insert(name).second) return Fail(key, field, "given twice");
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        std::string list;
        for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
        return Fail(key, field, "unknown field (known: " + list + ")");
      }
    }
    return {};
  }

  Result<double> Number(const YAML::Node& node, std::string_view field, double min,
                        double max) const {
    const std::string text = node.IsScalar() ? node.Scalar() : "";
    const auto v = node.IsScalar() ? ToNumber(text) : std::nullopt;
    if (!v) return Fail(node, field, "expected a number, got '" + text + "'");
    if (*v < min || *v > max) {
      std::ostringstream range;
      range << "must be between " << min << " and " << max << ", got " << text;
      if (*v < 0 && min >= 0) range.str("must not be negative, got " + text);
      return Fail(node, field, range.str());
    }
    return *v;
  }

 private:
  std::string_view source_;
};

Result<FailureModel> FromYaml(const YAML::Node& root, const YamlErrors& errors) {
  if (!root || root.IsNull()) return errors.Fail(root, "(document)", "empty: expected a mapping");
  if (auto ok = errors.CheckKeys(root, "", {"name", "base", "repair", "lemons", "components"});
      !ok) {
    return std::unexpected(ok.error());
  }
  FailureModel m;
  if (const YAML::Node base = root["base"]) {
    const std::string name = base.IsScalar() ? base.Scalar() : "";
    auto preset = FailurePreset(name);
    if (!preset) return errors.Fail(base, "base", preset.error().message);
    m = *preset;
  }
  if (const YAML::Node name = root["name"]) {
    if (!name.IsScalar()) return errors.Fail(name, "name", "expected a name");
    m.name = name.Scalar();
  }
  if (const YAML::Node repair = root["repair"]) {
    const std::string kind = repair.IsScalar() ? repair.Scalar() : "";
    if (kind != "exponential" && kind != "fixed") {
      return errors.Fail(repair, "repair", "expected exponential or fixed, got '" + kind + "'");
    }
    m.fixed_repair = kind == "fixed";
  }
  if (const YAML::Node lemons = root["lemons"]) {
    if (auto ok = errors.CheckKeys(lemons, "lemons", {"fraction", "multiplier"}); !ok) {
      return std::unexpected(ok.error());
    }
    if (const YAML::Node f = lemons["fraction"]) {
      auto v = errors.Number(f, "lemons.fraction", 0, 1);
      if (!v) return std::unexpected(v.error());
      m.lemon_fraction = *v;
    }
    if (const YAML::Node k = lemons["multiplier"]) {
      auto v = errors.Number(k, "lemons.multiplier", 1, 1e6);
      if (!v) return std::unexpected(v.error());
      m.lemon_multiplier = *v;
    }
  }
  if (const YAML::Node components = root["components"]) {
    if (!components.IsMap()) {
      return errors.Fail(components, "components", "expected a mapping of component to rates");
    }
    std::set<std::string> seen;
    for (const auto& entry : components) {
      const YAML::Node key = entry.first;
      const YAML::Node value = entry.second;
      const std::string name = key.IsScalar() ? key.Scalar() : "?";
      const std::string field = "components." + name;
      const auto c = ParseComponent(name);
      if (!c) return errors.Fail(key, field, "unknown component (known: " + ComponentList() + ")");
      if (!seen.insert(std::string(ComponentName(*c))).second) {
        return errors.Fail(key, field, "given twice");
      }
      if (auto ok = errors.CheckKeys(value, field, {"rate_per_hour", "repair_hours"}); !ok) {
        return std::unexpected(ok.error());
      }
      // A rate above one failure per unit per minute is a unit mix-up, not a fleet.
      if (const YAML::Node rate = value["rate_per_hour"]) {
        auto v = errors.Number(rate, field + ".rate_per_hour", 0, 60);
        if (!v) return std::unexpected(v.error());
        m[*c].rate_per_hour = *v;
      }
      if (const YAML::Node repair = value["repair_hours"]) {
        auto v = errors.Number(repair, field + ".repair_hours", 0, 24.0 * 365 * 10);
        if (!v) return std::unexpected(v.error());
        m[*c].repair_hours = *v;
      }
    }
  }
  return m;
}

// An exponential draw with mean `mean_hours`, in ticks (at least 1 ms when the mean is > 0).
Tick ExponentialHours(Rng& rng, double mean_hours) {
  if (mean_hours <= 0) return 0;
  const double hours = -std::log1p(-rng.Real()) * mean_hours;
  return std::max<Tick>(1, FromSeconds(hours * 3600));
}

}  // namespace

std::vector<std::string> FailurePresetNames() { return {"llama3", "llama3-lemons", "none"}; }

Result<FailureModel> FailurePreset(std::string_view name) {
  if (name == "llama3") return Llama3();
  if (name == "llama3-lemons") {
    // Our assumption, for studying the drain rule: 0.5 % of nodes fail 50 times as often as the
    // rest, so they cause 0.005 × 50 / (1 + 0.005 × 49) = 20 % of hardware failures, each lemon
    // failing about every 8 days. Fleet-average rates stay those of "llama3".
    FailureModel m = Llama3();
    m.name = "llama3-lemons";
    m.lemon_fraction = 0.005;
    m.lemon_multiplier = 50;
    return m;
  }
  if (name == "none") {
    FailureModel m;
    m.name = "none";
    return m;
  }
  return InvalidArgument("failure model '" + std::string(name) +
                         "' is not a preset (llama3, llama3-lemons, none)");
}

Result<FailureModel> ParseFailureModelYaml(std::string_view text, std::string_view source) {
  const YamlErrors errors(source);
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    auto m = FromYaml(root, errors);
    if (m && m->name.empty()) m->name = std::string(source);
    return m;
  } catch (const YAML::Exception& e) {
    std::string where(source);
    if (!e.mark.is_null()) {
      where += ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1);
    }
    return InvalidArgument(where + ": (yaml): " + e.msg);
  } catch (const std::exception& e) {
    return InvalidArgument(std::string(source) + ": (yaml): " + e.what());
  }
}

Result<FailureModel> LoadFailureModelYaml(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError(path + ": cannot open the failure model");
  std::ostringstream text;
  text << in.rdbuf();
  return ParseFailureModelYaml(text.str(), path);
}

FailureSchedule GenerateFailures(const FailureModel& model, const Cluster& cluster,
                                 const RecoveryTopology& topology, Tick horizon,
                                 std::uint64_t seed) {
  FailureSchedule out;
  const auto nodes = static_cast<std::uint32_t>(cluster.node_count());
  if (nodes == 0 || horizon <= 0) return out;

  // Lemons: a seeded partial shuffle picks round(fraction × nodes) of them.
  std::vector<std::uint8_t> is_lemon(nodes, 0);
  const auto lemon_count = static_cast<std::uint32_t>(
      std::min<double>(nodes, std::llround(model.lemon_fraction * nodes)));
  if (lemon_count > 0 && model.lemon_multiplier > 1) {
    std::vector<std::uint32_t> order(nodes);
    for (std::uint32_t i = 0; i < nodes; ++i) order[i] = i;
    Rng rng(Rng::Mix(seed, 0x1e3017));
    for (std::uint32_t i = 0; i < lemon_count; ++i) {
      const auto j = i + static_cast<std::uint32_t>(rng.Uniform(nodes - i));
      std::swap(order[i], order[j]);
      is_lemon[order[i]] = 1;
    }
    for (std::uint32_t i = 0; i < nodes; ++i) {
      if (is_lemon[i]) out.lemons.push_back(NodeId(i));
    }
  }
  const double lemon_share = out.lemons.empty() ? 0 : static_cast<double>(lemon_count) / nodes;
  const double excess = out.lemons.empty() ? 0 : model.lemon_multiplier - 1;

  // Units of each kind, as cumulative weights: a GPU failure picks a GPU uniformly, i.e. a node
  // in proportion to its GPU count.
  std::vector<std::uint64_t> gpu_prefix(nodes + 1, 0), lemon_gpu_prefix(nodes + 1, 0);
  for (std::uint32_t i = 0; i < nodes; ++i) {
    const auto g = static_cast<std::uint64_t>(cluster.node(NodeId(i)).gpu_count);
    gpu_prefix[i + 1] = gpu_prefix[i] + g;
    lemon_gpu_prefix[i + 1] = lemon_gpu_prefix[i] + (is_lemon[i] ? g : 0);
  }

  // One Poisson stream per component (and per lemon excess), each with its own generator, so
  // that changing one component's rate leaves the others' failures where they were.
  const auto stream = [&](Component c, bool lemons, double rate_per_unit) {
    const FailureUnit unit = UnitOf(c);
    std::uint64_t units = 0;
    const std::vector<std::uint64_t>* prefix = nullptr;
    switch (unit) {
      case FailureUnit::kGpu:
        prefix = lemons ? &lemon_gpu_prefix : &gpu_prefix;
        units = prefix->back();
        break;
      case FailureUnit::kNode:
        units = lemons ? lemon_count : nodes;
        break;
      case FailureUnit::kLeaf:
        units = lemons ? 0 : static_cast<std::uint64_t>(topology.leaf_count());
        break;
    }
    const double rate_per_hour = rate_per_unit * static_cast<double>(units);
    if (units == 0 || rate_per_hour <= 0) return;
    Rng rng(Rng::Mix(seed, static_cast<std::uint64_t>(c) * 2 + (lemons ? 1 : 0) + 1));
    const double mean_repair = model[c].repair_hours;
    Tick t = 0;
    while (true) {
      t += ExponentialHours(rng, 1.0 / rate_per_hour);
      if (t >= horizon) break;
      FailureEvent e;
      e.time = t;
      e.component = c;
      e.lemon = lemons;
      const std::uint64_t u = rng.Uniform(units);
      switch (unit) {
        case FailureUnit::kGpu: {
          const auto it = std::upper_bound(prefix->begin(), prefix->end(), u);
          const auto node = static_cast<std::uint32_t>(it - prefix->begin() - 1);
          e.target = node;
          e.gpu = static_cast<int>(u - (*prefix)[node]);
          break;
        }
        case FailureUnit::kNode:
          e.target = lemons ? out.lemons[u].value : static_cast<std::uint32_t>(u);
          break;
        case FailureUnit::kLeaf:
          e.target = static_cast<std::uint32_t>(u);
          break;
      }
      e.repair =
          model.fixed_repair ? FromSeconds(mean_repair * 3600) : ExponentialHours(rng, mean_repair);
      out.events.push_back(e);
    }
  };
  for (Component c : kAllComponents) {
    const double rate = model[c].rate_per_hour;
    const bool lemon_kind = c == Component::kGpu || c == Component::kHost || c == Component::kNic;
    if (lemon_kind && excess > 0) {
      // Normal nodes fail at r0, lemons at r0 × multiplier, and the average stays `rate`:
      // r0 × (1 + share × (multiplier − 1)) = rate.
      const double r0 = rate / (1 + lemon_share * excess);
      stream(c, false, r0);
      stream(c, true, r0 * excess);
    } else {
      stream(c, false, rate);
    }
  }
  std::stable_sort(out.events.begin(), out.events.end(),
                   [](const FailureEvent& a, const FailureEvent& b) { return a.time < b.time; });
  return out;
}

}  // namespace tessera
