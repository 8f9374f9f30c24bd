#include "spec/job_spec.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>
#include <tuple>

#include "spec/document.h"
#include "spec/label_selector.h"
#include "spec/submission_body.h"
#include "spec/text.h"

namespace tessera {

namespace {

using Json = nlohmann::json;

constexpr std::int64_t kMaxCpuMilli = 1024 * 1000;              // 1024 cores per task
constexpr std::int64_t kMaxMemoryMib = std::int64_t{64} << 20;  // 64 TiB per task
constexpr int kMaxCheckpointIntervalSeconds = 30 * 24 * 3600;
constexpr std::size_t kMaxPathBytes = 4096;
constexpr std::size_t kMaxEnvValueBytes = 32 * 1024;
constexpr std::size_t kMaxGpuModelNames = 16;

std::string Describe(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return std::string("boolean ") + (v.get<bool>() ? "true" : "false");
    case Json::value_t::string:
      return "string " + Quote(v.get_ref<const std::string&>());
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return v.dump();
    case Json::value_t::number_float: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", v.get<double>());
      return buf;
    }
    case Json::value_t::array:
      return "a list";
    case Json::value_t::object:
      return "a mapping";
    default:
      return "a value of another type";
  }
}

std::string MilliText(std::int64_t milli) {
  std::string s = std::to_string(milli / 1000);
  if (milli % 1000 != 0) {
    char buf[8];
    std::snprintf(buf, sizeof buf, ".%03d", static_cast<int>(milli % 1000));
    std::string frac = buf;
    while (frac.back() == '0') frac.pop_back();
    s += frac;
  }
  return s;
}

// Parses "0.5", "2", "1.25": a non-negative decimal with at most three fraction digits, as
// thousandths. Returns nullopt for anything else.
std::optional<std::int64_t> ParseMilli(std::string_view s) {
  if (s.empty() || s.size() > 24) return std::nullopt;
  std::int64_t whole = 0, frac = 0;
  int frac_digits = 0;
  bool dot = false, any = false;
  for (char c : s) {
    if (c == '.') {
      if (dot) return std::nullopt;
      dot = true;
    } else if (c >= '0' && c <= '9') {
      any = true;
      if (dot) {
        if (++frac_digits > 3) {
          if (c != '0') return std::nullopt;
          continue;
        }
        frac = frac * 10 + (c - '0');
      } else {
        whole = whole * 10 + (c - '0');
        if (whole > (std::int64_t{1} << 40)) return std::nullopt;
      }
    } else {
      return std::nullopt;
    }
  }
  if (!any) return std::nullopt;
  while (frac_digits < 3) {
    frac *= 10;
    ++frac_digits;
  }
  return whole * 1000 + frac;
}

std::optional<std::int64_t> MilliOfNumber(const Json& v) {
  if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    if (i < 0 || i > (std::int64_t{1} << 40)) return std::nullopt;
    return i * 1000;
  }
  if (v.is_number_unsigned()) return std::nullopt;
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || d < 0 || d > 1e12) return std::nullopt;
    const double m = d * 1000;
    if (std::fabs(m - std::round(m)) > 1e-6) return std::nullopt;
    return static_cast<std::int64_t>(std::llround(m));
  }
  return std::nullopt;
}

// Bytes from "20Gi", "512Mi", "1.5G", "1024" (bytes) or an integer; nullopt when malformed.
std::optional<double> ParseBytes(const Json& v) {
  if (v.is_number_integer()) {
    auto i = v.get<std::int64_t>();
    return i < 0 ? std::nullopt : std::optional<double>(static_cast<double>(i));
  }
  if (v.is_number_unsigned()) return static_cast<double>(v.get<std::uint64_t>());
  if (!v.is_string()) return std::nullopt;
  const std::string& s = v.get_ref<const std::string&>();
  std::size_t i = 0;
  while (i < s.size() && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.')) ++i;
  auto milli = ParseMilli(std::string_view(s).substr(0, i));
  if (!milli) return std::nullopt;
  const std::string unit = s.substr(i);
  static const std::pair<const char*, double> kUnits[] = {
      {"", 1},
      {"Ki", 1024.0},
      {"Mi", 1024.0 * 1024},
      {"Gi", 1024.0 * 1024 * 1024},
      {"Ti", 1024.0 * 1024 * 1024 * 1024},
      {"K", 1e3},
      {"k", 1e3},
      {"M", 1e6},
      {"G", 1e9},
      {"T", 1e12},
  };
  for (const auto& [name, factor] : kUnits) {
    if (unit == name) return static_cast<double>(*milli) / 1000.0 * factor;
  }
  return std::nullopt;
}

class Validator {
 public:
  explicit Validator(std::vector<FieldError>& errors) : errors_(errors) {}

  void Fail(std::string field, std::string reason) {
    errors_.push_back({std::move(field), std::move(reason)});
  }
  bool ok() const { return errors_.empty(); }
  std::size_t errors() const { return errors_.size(); }

  static std::string Join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

  // Reports keys of `obj` not in `allowed`.
  void CheckKeys(const Json& obj, const std::string& path, const std::set<std::string>& allowed,
                 const std::string& context) {
    for (const auto& [key, value] : obj.items()) {
      if (!allowed.contains(key)) {
        std::string field = Join(path, FirstInvalidUtf8(key) ? Quote(key) : key);
        Fail(field, "unknown field" + (context.empty() ? "" : " for " + context));
      }
    }
  }

  const Json* Find(const Json& obj, const std::string& key) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
  }

  std::optional<std::int64_t> Int(const Json& obj, const std::string& path, const std::string& key,
                                  std::int64_t lo, std::int64_t hi, bool required) {
    const std::string field = Join(path, key);
    const Json* v = Find(obj, key);
    if (v == nullptr) {
      if (required) Fail(field, "required");
      return std::nullopt;
    }
    const std::string range =
        "must be between " + std::to_string(lo) + " and " + std::to_string(hi);
    if (v->is_number_integer()) {
      const auto i = v->get<std::int64_t>();
      if (i < lo || i > hi) {
        Fail(field, range + ", got " + std::to_string(i));
        return std::nullopt;
      }
      return i;
    }
    if (v->is_number_unsigned()) {
      Fail(field, range + ", got " + v->dump());
      return std::nullopt;
    }
    if (v->is_number_float()) {
      const double d = v->get<double>();
      if (std::isfinite(d) && d == std::floor(d) &&
          (d < static_cast<double>(lo) || d > static_cast<double>(hi))) {
        Fail(field, range + ", got " + Describe(*v));
      } else {
        Fail(field, "must be an integer, got " + Describe(*v));
      }
      return std::nullopt;
    }
    Fail(field, "must be an integer, got " + Describe(*v));
    return std::nullopt;
  }

  // A finite number in (lo, hi], or [lo, hi] when `lo_included`; `range` says which in words.
  std::optional<double> Number(const Json& obj, const std::string& path, const std::string& key,
                               double lo, double hi, bool lo_included, const std::string& range) {
    const Json* v = Find(obj, key);
    if (v == nullptr) return std::nullopt;
    const double d = v->is_number() ? v->get<double>() : std::nan("");
    if (!std::isfinite(d) || d > hi || d < lo || (d == lo && !lo_included)) {
      Fail(Join(path, key), "must be a number " + range + ", got " + Describe(*v));
      return std::nullopt;
    }
    return d;
  }

  std::optional<bool> Bool(const Json& obj, const std::string& path, const std::string& key) {
    const Json* v = Find(obj, key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_boolean()) {
      Fail(Join(path, key), "must be true or false, got " + Describe(*v));
      return std::nullopt;
    }
    return v->get<bool>();
  }

  // A string with no NUL or other control bytes (tabs allowed only when `allow_tab`).
  std::optional<std::string> String(const Json& v, const std::string& field, std::size_t max_bytes,
                                    bool allow_empty = false) {
    if (!v.is_string()) {
      Fail(field, "must be a string, got " + Describe(v));
      return std::nullopt;
    }
    const std::string& s = v.get_ref<const std::string&>();
    if (auto bad = FirstInvalidUtf8(s)) {
      Fail(field, "is not valid UTF-8 (byte " + std::to_string(*bad) + ")");
      return std::nullopt;
    }
    if (s.size() > max_bytes) {
      Fail(field, "must be at most " + std::to_string(max_bytes) + " bytes, got " +
                      std::to_string(s.size()));
      return std::nullopt;
    }
    if (!allow_empty && s.empty()) {
      Fail(field, "must not be empty");
      return std::nullopt;
    }
    if (s.find('\0') != std::string::npos) {
      Fail(field, "must not contain NUL bytes");
      return std::nullopt;
    }
    return s;
  }

  std::optional<std::string> StringField(const Json& obj, const std::string& path,
                                         const std::string& key, std::size_t max_bytes,
                                         bool required) {
    const Json* v = Find(obj, key);
    if (v == nullptr) {
      if (required) Fail(Join(path, key), "required");
      return std::nullopt;
    }
    return String(*v, Join(path, key), max_bytes);
  }

  const Json* Object(const Json& obj, const std::string& path, const std::string& key,
                     bool required) {
    const Json* v = Find(obj, key);
    if (v == nullptr) {
      if (required) Fail(Join(path, key), "required");
      return nullptr;
    }
    if (!v->is_object()) {
      Fail(Join(path, key), "must be a mapping, got " + Describe(*v));
      return nullptr;
    }
    return v;
  }

  std::optional<std::vector<std::string>> Command(const Json& obj, const std::string& path,
                                                  const std::string& key, bool required) {
    const std::string field = Join(path, key);
    const Json* v = Find(obj, key);
    if (v == nullptr) {
      if (required) Fail(field, "required (the argv to run, e.g. [python3, train.py])");
      return std::nullopt;
    }
    if (v->is_string()) {
      Fail(field,
           "must be a list of arguments (argv), got a string; no shell is used unless "
           "`shell: true` is set");
      return std::nullopt;
    }
    if (!v->is_array()) {
      Fail(field, "must be a list of arguments (argv), got " + Describe(*v));
      return std::nullopt;
    }
    if (v->empty()) {
      Fail(field, "must not be empty");
      return std::nullopt;
    }
    if (v->size() > kMaxArgs) {
      Fail(field, "must have at most " + std::to_string(kMaxArgs) + " arguments, got " +
                      std::to_string(v->size()));
      return std::nullopt;
    }
    std::vector<std::string> argv;
    bool good = true;
    for (std::size_t i = 0; i < v->size(); ++i) {
      const Json& a = (*v)[i];
      const std::string f = field + "[" + std::to_string(i) + "]";
      if (a.is_number() || a.is_boolean()) {  // `[sleep, 5]`: an argument is text
        argv.push_back(a.is_number_float() ? Describe(a) : a.dump());
        continue;
      }
      auto s = String(a, f, kMaxArgBytes, /*allow_empty=*/i > 0);
      if (!s) {
        good = false;
        continue;
      }
      argv.push_back(std::move(*s));
    }
    if (!good) return std::nullopt;
    return argv;
  }

  // GPUs per task: a whole number 0..16, or a share below 1 ("0.5", 0.25) when allowed.
  std::optional<TaskShape> Gpus(const Json& obj, const std::string& path, const std::string& key,
                                bool required, bool share_allowed, int default_gpus) {
    const std::string field = Join(path, key);
    const Json* v = Find(obj, key);
    TaskShape shape;
    shape.gpu_milli = static_cast<std::int32_t>(kMilliPerGpu);
    if (v == nullptr) {
      if (required) {
        Fail(field, "required");
        return std::nullopt;
      }
      shape.gpus = default_gpus;
      return shape;
    }
    std::optional<std::int64_t> milli;
    if (v->is_string()) {
      milli = ParseMilli(v->get_ref<const std::string&>());
    } else if (v->is_number()) {
      if (v->is_number_integer() && v->get<std::int64_t>() < 0) {
        Fail(field,
             "must be between 0 and " + std::to_string(kMaxGpusPerTask) + ", got " + v->dump());
        return std::nullopt;
      }
      milli = MilliOfNumber(*v);
    } else {
      Fail(field, "must be a number of GPUs, got " + Describe(*v));
      return std::nullopt;
    }
    if (!milli) {
      Fail(field,
           "must be a whole number of GPUs or a share below 1 with at most three "
           "decimals (\"0.5\"), got " +
               Describe(*v));
      return std::nullopt;
    }
    if (*milli % kMilliPerGpu == 0) {
      const std::int64_t gpus = *milli / kMilliPerGpu;
      if (gpus > kMaxGpusPerTask) {
        Fail(field, "must be between 0 and " + std::to_string(kMaxGpusPerTask) +
                        " (a task runs on one node), got " + std::to_string(gpus));
        return std::nullopt;
      }
      shape.gpus = static_cast<int>(gpus);
      return shape;
    }
    if (*milli > kMilliPerGpu) {
      Fail(field, "a share of a GPU must be below 1; more than one GPU must be whole, got " +
                      MilliText(*milli));
      return std::nullopt;
    }
    if (!share_allowed) {
      Fail(field, "fractional GPUs are not allowed for gangs, got " + MilliText(*milli));
      return std::nullopt;
    }
    shape.gpus = 1;
    shape.gpu_milli = static_cast<std::int32_t>(*milli);
    return shape;
  }

  // cpu (cores: 2, 0.5, "500m") and memory ("16Gi") of each task.
  void CpuMemory(const Json& obj, const std::string& path, TaskShape& shape) {
    if (const Json* v = Find(obj, "cpu")) {
      std::optional<std::int64_t> milli;
      if (v->is_string()) {
        const auto& s = v->get_ref<const std::string&>();
        if (!s.empty() && s.back() == 'm') {
          auto m = ParseMilli(std::string_view(s).substr(0, s.size() - 1));
          if (m && *m % 1000 == 0) milli = *m / 1000;
        } else {
          milli = ParseMilli(s);
        }
      } else if (v->is_number_integer() && v->get<std::int64_t>() < 0) {
        milli = std::nullopt;
      } else if (v->is_number()) {
        milli = MilliOfNumber(*v);
      }
      if (!milli) {
        Fail(Join(path, "cpu"),
             "must be a number of cores (2, 0.5) or millicores (\"500m\"), got " + Describe(*v));
      } else if (*milli > kMaxCpuMilli) {
        Fail(Join(path, "cpu"), "must be at most " + std::to_string(kMaxCpuMilli / 1000) +
                                    " cores, got " + MilliText(*milli));
      } else {
        shape.cpu_milli = *milli;
      }
    }
    if (const Json* v = Find(obj, "memory")) {
      auto bytes = ParseBytes(*v);
      if (!bytes) {
        Fail(Join(path, "memory"),
             "must be a size such as \"16Gi\" or \"512Mi\", got " + Describe(*v));
      } else {
        const double mib = std::ceil(*bytes / (1024.0 * 1024.0));
        if (mib > static_cast<double>(kMaxMemoryMib)) {
          Fail(Join(path, "memory"), "must be at most 64Ti, got " + Describe(*v));
        } else {
          shape.memory_mib = static_cast<std::int64_t>(mib);
        }
      }
    }
  }

 private:
  std::vector<FieldError>& errors_;
};

const std::set<std::string> kCommonSpecKeys = {"priority",
                                               "preemptible",
                                               "gpuModels",
                                               "topology",
                                               "gracePeriodSeconds",
                                               "maxRestarts",
                                               "command",
                                               "env",
                                               "shell",
                                               "workingDir",
                                               "cpu",
                                               "memory",
                                               "timeLimitSeconds",
                                               "expectedDurationSeconds",
                                               "dependencies"};

std::set<std::string> SpecKeysFor(WorkloadKind kind) {
  std::set<std::string> keys = kCommonSpecKeys;
  switch (kind) {
    case WorkloadKind::kTraining:
      keys.insert({"workers", "gpusPerWorker", "processesPerWorker", "elastic", "checkpoint",
                   "successPolicy", "recovery"});
      break;
    case WorkloadKind::kInference:
      keys.insert({"replicas", "gpusPerReplica", "gpuMemory", "slo", "routing", "autoscaling"});
      break;
    case WorkloadKind::kBatch:
      keys.insert({"tasks", "gpusPerTask", "gpuMemory", "parallelism"});
      break;
    case WorkloadKind::kDevSession:
      keys.insert({"gpus", "gpuMemory"});
      break;
    case WorkloadKind::kRL:
      keys.insert({"roles", "checkpoint"});
      break;
  }
  return keys;
}

bool ValidLabel(std::string_view s) {
  if (s.empty() || s.size() > kMaxNameLength) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  for (char c : s) {
    if (!alnum(c) && c != '-') return false;
  }
  return alnum(s.front()) && alnum(s.back());
}

bool ValidEnvName(std::string_view s) {
  if (s.empty() || s.size() > 256) return false;
  if (!(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

bool ValidModelName(std::string_view s) {
  if (s.empty() || s.size() > 32) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) {
      return false;
    }
  }
  return true;
}

// Applies gpuMemory (a share sized by memory) to `shape`.
// The routing policies the gateway knows (src/serve/routing_registry.cpp registers them); spec
// depends on core only, so the names are listed here and the gateway checks them again.
constexpr std::array<std::string_view, 5> kRoutingPolicies = {"round-robin", "least-request",
                                                              "prefix", "weighted", "tessera"};

void ParseRouting(Validator& val, const Json& routing, JobSpec& spec) {
  val.CheckKeys(routing, "spec.routing", {"policy", "blockTokens"}, "");
  if (auto p = val.StringField(routing, "spec.routing", "policy", 64, false)) {
    if (std::find(kRoutingPolicies.begin(), kRoutingPolicies.end(), *p) == kRoutingPolicies.end()) {
      val.Fail("spec.routing.policy",
               "unknown policy \"" + *p +
                   "\" (round-robin, least-request, prefix, weighted or tessera)");
    } else {
      spec.routing_policy = *p;
    }
  }
  if (auto b = val.Int(routing, "spec.routing", "blockTokens", 1, kMaxBlockTokens, false)) {
    spec.routing_block_tokens = static_cast<int>(*b);
  }
}

// spec.autoscaling's policy (hpa, the default, or kpa) and the windows that belong to it: HPA's
// scale-up window; Knative's stable window, panic window share and panic threshold (bounds as
// Knative's but for the stable window, which may be under its 6 s for time-compressed replays).
// A field of the other policy is refused rather than ignored.
bool ParseAutoscalePolicyFields(Validator& val, const Json& a, const std::string& path,
                                AutoscalingSpec& as) {
  if (const Json* p = val.Find(a, "policy")) {
    auto name = val.String(*p, path + ".policy", 16);
    if (!name) return false;
    auto policy = ParseAutoscalePolicy(*name);
    if (!policy) {
      val.Fail(path + ".policy", "unknown policy " + DumpJson(Json(*name)) + " (" +
                                     std::string(kAutoscalePolicyNames) + ")");
      return false;
    }
    as.policy = *policy;
  }
  const bool kpa = as.policy == AutoscalePolicy::kKpa;
  bool ok = true;
  for (const char* key : {"stableWindowSeconds", "panicWindowPercentage",
                          "panicThresholdPercentage", "scaleUpStabilizationSeconds"}) {
    const bool kpa_field = std::string_view(key) != "scaleUpStabilizationSeconds";
    if (val.Find(a, key) != nullptr && kpa_field != kpa) {
      val.Fail(path + "." + key,
               std::string("is not a field of policy ") + (kpa ? "kpa" : "hpa (give policy: kpa)"));
      ok = false;
    }
  }
  if (!ok) return false;
  if (kpa) {
    as.scale_down_stabilization_seconds = kDefaultKpaScaleDownDelaySeconds;
    const std::size_t errors_before = val.errors();
    if (auto v = val.Number(a, path, "stableWindowSeconds", 0, kMaxStabilizationSeconds, false,
                            "above 0, at most 3600"))
      as.stable_window_seconds = *v;
    if (auto v = val.Number(a, path, "panicWindowPercentage", 1, 100, true, "from 1 to 100"))
      as.panic_window_percentage = *v;
    if (auto v =
            val.Number(a, path, "panicThresholdPercentage", 110, 1000, true, "from 110 to 1000"))
      as.panic_threshold_percentage = *v;
    return val.errors() == errors_before;
  }
  if (auto v = val.Int(a, path, "scaleUpStabilizationSeconds", 0, kMaxStabilizationSeconds, false))
    as.scale_up_stabilization_seconds = static_cast<int>(*v);
  return true;
}

// spec.autoscaling (docs/autoscaling.md): the metric by name, a target above 0 (at most 1 for
// the KV-cache usage, a ratio), the policy and its windows (seconds). `path` is where it was
// given (spec.autoscaling, or spec.replicas.autoscaling as DESIGN.md places it).
void ParseAutoscaling(Validator& val, const Json& a, const std::string& path, JobSpec& spec) {
  if (!a.is_object()) {
    val.Fail(path,
             "must be an object {policy, metric, target, scaleUpStabilizationSeconds, "
             "scaleDownStabilizationSeconds, stableWindowSeconds, panicWindowPercentage, "
             "panicThresholdPercentage}, got " +
                 Describe(a));
    return;
  }
  val.CheckKeys(
      a, path,
      {"policy", "metric", "target", "scaleUpStabilizationSeconds", "scaleDownStabilizationSeconds",
       "stableWindowSeconds", "panicWindowPercentage", "panicThresholdPercentage"},
      "");
  AutoscalingSpec as;
  bool ok = ParseAutoscalePolicyFields(val, a, path, as);
  if (auto m = val.StringField(a, path, "metric", 64, true)) {
    if (auto metric = ParseAutoscaleMetric(*m)) {
      as.metric = *metric;
    } else {
      val.Fail(path + ".metric", "unknown metric " + DumpJson(Json(*m)) + " (" +
                                     std::string(kAutoscaleMetricNames) + ")");
      ok = false;
    }
  } else {
    ok = false;
  }
  const Json* t = val.Find(a, "target");
  if (t == nullptr) {
    val.Fail(path + ".target", "required");
    ok = false;
  } else if (!t->is_number() || !std::isfinite(t->get<double>()) || !(t->get<double>() > 0)) {
    val.Fail(path + ".target", "must be a number above 0, got " + Describe(*t));
    ok = false;
  } else if (as.metric == AutoscaleMetric::kKvCacheUtilization && t->get<double>() > 1) {
    val.Fail(path + ".target",
             "is a usage ratio for kv-cache-utilization: at most 1, got " + Describe(*t));
    ok = false;
  } else {
    as.target = t->get<double>();
  }
  if (auto v =
          val.Int(a, path, "scaleDownStabilizationSeconds", 0, kMaxStabilizationSeconds, false))
    as.scale_down_stabilization_seconds = static_cast<int>(*v);
  if (ok) spec.autoscaling = as;
}

// spec.autoscaling or spec.replicas.autoscaling (not both); replicas.min 0 needs it.
void ParseServiceAutoscaling(Validator& val, const Json& s, JobSpec& spec) {
  const Json* top = val.Find(s, "autoscaling");
  const Json* replicas = val.Find(s, "replicas");
  const Json* nested =
      replicas != nullptr && replicas->is_object() ? val.Find(*replicas, "autoscaling") : nullptr;
  if (top != nullptr && nested != nullptr) {
    val.Fail("spec.replicas.autoscaling",
             "give spec.autoscaling or spec.replicas.autoscaling, not both");
  } else if (top != nullptr) {
    ParseAutoscaling(val, *top, "spec.autoscaling", spec);
  } else if (nested != nullptr) {
    ParseAutoscaling(val, *nested, "spec.replicas.autoscaling", spec);
  }
  if (spec.replicas_min == 0 && top == nullptr && nested == nullptr && replicas != nullptr) {
    val.Fail("spec.replicas.min", "must be at least 1 without spec.autoscaling, got 0");
  }
}

void ApplyGpuMemory(Validator& val, const Json& spec, const std::vector<std::string>& models,
                    const std::string& gpus_key, TaskShape& shape) {
  const Json* v = val.Find(spec, "gpuMemory");
  if (v == nullptr) return;
  const std::string field = "spec.gpuMemory";
  if (spec.contains(gpus_key) && !spec[gpus_key].is_null() &&
      !(shape.gpus == 1 && shape.gpu_milli == kMilliPerGpu)) {
    val.Fail(field, "give either a share in spec." + gpus_key + " or gpuMemory, not both");
    return;
  }
  auto bytes = ParseBytes(*v);
  if (!bytes || *bytes <= 0) {
    val.Fail(field, "must be a size such as \"20Gi\", got " + Describe(*v));
    return;
  }
  std::int64_t model_mib = 0;
  for (const auto& m : models) {
    const auto mib = KnownGpuMemoryMib(m);
    if (mib > 0 && (model_mib == 0 || mib < model_mib)) model_mib = mib;
  }
  if (model_mib == 0) model_mib = KnownGpuMemoryMib("H100");
  const double want_mib = *bytes / (1024.0 * 1024.0);
  if (want_mib > static_cast<double>(model_mib)) {
    val.Fail(field, "is more than one GPU holds (" + std::to_string(model_mib / 1024) +
                        "Gi); ask for whole GPUs instead");
    return;
  }
  auto milli = static_cast<std::int32_t>(
      std::ceil(want_mib * static_cast<double>(kMilliPerGpu) / static_cast<double>(model_mib)));
  shape.gpus = 1;
  shape.gpu_milli = std::clamp<std::int32_t>(milli, 1, static_cast<std::int32_t>(kMilliPerGpu));
}

// spec.dependencies: [{type: afterok|afterany, job: NAME or QUEUE/NAME}], a bare NAME being in
// the job's own queue.
void ParseDependencies(Validator& val, const Json& s, JobSpec& spec) {
  const Json* deps = val.Find(s, "dependencies");
  if (deps == nullptr) return;
  const std::string field = "spec.dependencies";
  if (!deps->is_array()) {
    val.Fail(field,
             "must be a list of {type: afterok|afterany, job: NAME}, got " + Describe(*deps));
    return;
  }
  if (deps->size() > kMaxDependencies) {
    val.Fail(field, "must have at most " + std::to_string(kMaxDependencies) + " entries, got " +
                        std::to_string(deps->size()));
    return;
  }
  for (std::size_t i = 0; i < deps->size(); ++i) {
    const std::string f = field + "[" + std::to_string(i) + "]";
    const Json& d = (*deps)[i];
    if (!d.is_object()) {
      val.Fail(f, "must be a mapping {type: afterok|afterany, job: NAME}, got " + Describe(d));
      continue;
    }
    val.CheckKeys(d, f, {"type", "job"}, "a dependency");
    JobDependency dep;
    bool good = true;
    if (auto type = val.StringField(d, f, "type", 64, true)) {
      if (*type == "afterok") {
        dep.type = DependencyType::kAfterOk;
      } else if (*type == "afterany") {
        dep.type = DependencyType::kAfterAny;
      } else {
        val.Fail(f + ".type", "must be afterok or afterany, got " + Quote(*type));
        good = false;
      }
    } else {
      good = false;
    }
    auto job = val.StringField(d, f, "job", kMaxQueueLength + kMaxNameLength + 1, true);
    if (!job || !good) continue;
    const auto slash = job->rfind('/');
    dep.name = slash == std::string::npos ? *job : job->substr(slash + 1);
    dep.queue = slash == std::string::npos ? spec.queue : job->substr(0, slash);
    if (!ValidJobName(dep.name) || !ValidQueuePath(dep.queue)) {
      val.Fail(f + ".job",
               "must be a job name, or QUEUE/NAME for a job in another queue, got " + Quote(*job));
    } else if (dep.queue == spec.queue && dep.name == spec.name) {
      val.Fail(f + ".job", "a job cannot depend on itself");
    } else if (std::find(spec.dependencies.begin(), spec.dependencies.end(), dep) ==
               spec.dependencies.end()) {
      spec.dependencies.push_back(std::move(dep));
    }
  }
}

}  // namespace

std::string_view DependencyTypeName(DependencyType type) {
  return type == DependencyType::kAfterOk ? "afterok" : "afterany";
}

namespace {

// metadata.labels: string values only, as Kubernetes (a YAML `tier: 1` must be quoted).
void ReadLabels(Validator& val, const Json& labels, std::map<std::string, std::string>& out) {
  constexpr std::size_t kMaxLabels = 64;
  if (labels.size() > kMaxLabels) {
    val.Fail("metadata.labels", "must have at most " + std::to_string(kMaxLabels) +
                                    " labels, got " + std::to_string(labels.size()));
    return;
  }
  for (const auto& [key, value] : labels.items()) {
    const std::string f = "metadata.labels." + (FirstInvalidUtf8(key) ? Quote(key) : key);
    if (auto why = LabelKeyProblem(key); !why.empty()) {
      val.Fail(f, "not a label key: " + why);
    } else if (!value.is_string()) {
      val.Fail(f, "must be a string (quote it), got " + Describe(value));
    } else if (auto v = value.get<std::string>(); !LabelValueProblem(v).empty()) {
      val.Fail(f, "not a label value: " + LabelValueProblem(v) + ", got " + Quote(v));
    } else {
      out[key] = v;
    }
  }
}

}  // namespace

bool operator==(const JobSpec& a, const JobSpec& b) {
  auto fields = [](const JobSpec& s) {
    return std::tie(s.kind, s.name, s.queue, s.user, s.labels, s.priority, s.preemptible,
                    s.gpu_models, s.gpu_model_speeds, s.topology.require, s.topology.prefer,
                    s.min_workers, s.max_workers, s.checkpoint_interval_seconds, s.checkpoint_dir,
                    s.grace_period_seconds, s.max_restarts, s.env, s.shell, s.working_dir,
                    s.replicas_min, s.replicas_max, s.slo_latency_ms, s.slo_tbt_ms,
                    s.slo_percentile, s.routing_policy, s.routing_block_tokens, s.roles,
                    s.time_limit_seconds, s.expected_duration_seconds, s.dependencies,
                    s.success_policy, s.parallelism, s.recovery, s.autoscaling);
  };
  return fields(a) == fields(b);
}

int JobSpec::TaskCount() const {
  int n = 0;
  for (const auto& r : roles) n += r.count;
  return n;
}

Workload JobSpec::ToWorkload() const {
  Workload w;
  w.name = name;
  w.kind = kind;
  w.queue = queue;
  w.user = user;
  w.priority = priority;
  w.preemptible = preemptible;
  for (const auto& r : roles) w.groups.push_back(TaskGroup{r.name, r.count, r.shape, r.affinity});
  w.gpu_models = gpu_models;
  w.gpu_model_speeds = gpu_model_speeds;
  w.topology = topology;
  w.checkpoint_interval = checkpoint_interval_seconds * kSecond;
  w.min_workers = min_workers;
  w.max_workers = max_workers;
  return w;
}

std::pair<const RoleSpec*, int> JobSpec::RoleOfRank(int rank) const {
  for (const auto& r : roles) {
    if (rank < r.count) return {&r, rank};
    rank -= r.count;
  }
  return {roles.empty() ? nullptr : &roles.back(), rank};
}

std::string QualifiedName(const std::string& queue, const std::string& name) {
  return queue + "/" + name;
}

bool ValidJobName(std::string_view name) { return ValidLabel(name); }

bool ValidQueuePath(std::string_view queue) {
  if (queue.empty() || queue.size() > kMaxQueueLength) return false;
  int depth = 0;
  std::size_t pos = 0;
  while (true) {
    const std::size_t slash = queue.find('/', pos);
    if (!ValidLabel(queue.substr(pos, slash == std::string_view::npos ? slash : slash - pos))) {
      return false;
    }
    if (++depth > kMaxQueueDepth) return false;
    if (slash == std::string_view::npos) return true;
    pos = slash + 1;
  }
}

const std::vector<std::string>& ReservedEnvNames() {
  static const std::vector<std::string> kNames = {"CUDA_VISIBLE_DEVICES",
                                                  "MASTER_ADDR",
                                                  "MASTER_PORT",
                                                  "WORLD_SIZE",
                                                  "RANK",
                                                  "LOCAL_RANK",
                                                  "LOCAL_WORLD_SIZE",
                                                  "NODE_RANK",
                                                  "GROUP_RANK",
                                                  "ROLE_NAME",
                                                  "ROLE_RANK",
                                                  "ROLE_WORLD_SIZE",
                                                  "TASK_INDEX",
                                                  "TESSERA_JOB",
                                                  "TESSERA_QUEUE",
                                                  "TESSERA_TASK_ID",
                                                  "TESSERA_ATTEMPT",
                                                  "TESSERA_NODE",
                                                  "TESSERA_NODES",
                                                  "TESSERA_SIMULATED_GPUS",
                                                  "TESSERA_CHECKPOINT_DIR",
                                                  "TESSERA_CHECKPOINT_INTERVAL_SECONDS",
                                                  "TASK_COUNT",
                                                  "REPLICA_INDEX",
                                                  "CUDA_DEVICE_ORDER",
                                                  "TESSERA_GPU_SHARE_MILLI",
                                                  "TESSERA_PORT"};
  return kNames;
}

std::int64_t KnownGpuMemoryMib(std::string_view model) {
  static const std::pair<std::string_view, std::int64_t> kModels[] = {
      {"H100", 80 * 1024}, {"H200", 141 * 1024}, {"H800", 80 * 1024},  {"H20", 96 * 1024},
      {"A100", 80 * 1024}, {"A800", 80 * 1024},  {"B200", 180 * 1024}, {"GB200", 186 * 1024},
      {"L40S", 48 * 1024}, {"L40", 48 * 1024},   {"L4", 24 * 1024},    {"A10", 24 * 1024},
      {"A30", 24 * 1024},  {"V100", 32 * 1024},  {"T4", 16 * 1024},    {"MI300X", 192 * 1024},
  };
  for (const auto& [name, mib] : kModels) {
    if (name == model) return mib;
  }
  return 0;
}

Result<JobSpec> JobSpecFromJson(const Json& doc, std::vector<FieldError>* errors_out) {
  std::vector<FieldError> errors;
  Validator val(errors);
  JobSpec spec;
  auto finish = [&]() -> Result<JobSpec> {
    if (errors_out != nullptr) *errors_out = errors;
    if (errors.empty()) return spec;
    std::string msg;
    for (const auto& e : errors) {
      if (!msg.empty()) msg += "; ";
      msg += e.ToString();
    }
    return InvalidArgument(msg);
  };

  if (!doc.is_object()) {
    val.Fail("", "a job spec must be a mapping with apiVersion, kind, metadata and spec, got " +
                     Describe(doc));
    return finish();
  }
  // `status` is what the controller reports (`tessera get jobs -o yaml`); ignored here, as
  // `kubectl apply` ignores it, so that a listed job can be submitted again.
  val.CheckKeys(doc, "", {"apiVersion", "kind", "metadata", "spec", "status"}, "");

  if (auto api = val.StringField(doc, "", "apiVersion", 64, true)) {
    if (*api != "tessera/v1") {
      val.Fail("apiVersion", "must be \"tessera/v1\", got " + Quote(*api));
    }
  }
  bool kind_ok = false;
  if (auto kind = val.StringField(doc, "", "kind", 64, true)) {
    if (ParseKind(*kind, &spec.kind)) {
      kind_ok = true;
    } else {
      val.Fail("kind", "unknown kind " + Quote(*kind) +
                           "; expected one of TrainingJob, InferenceService, BatchJob, "
                           "DevSession, RLJob");
    }
  }

  if (const Json* meta = val.Object(doc, "", "metadata", true)) {
    val.CheckKeys(*meta, "metadata", {"name", "queue", "user", "labels"}, "");
    if (auto name = val.StringField(*meta, "metadata", "name", 1024, true)) {
      if (name->size() > kMaxNameLength) {
        val.Fail("metadata.name", "must be at most " + std::to_string(kMaxNameLength) +
                                      " characters, got " + std::to_string(name->size()));
      } else if (!ValidJobName(*name)) {
        val.Fail("metadata.name",
                 "must consist of lower-case letters, digits and '-', and start and end with a "
                 "letter or digit, got " +
                     Quote(*name));
      } else {
        spec.name = *name;
      }
    }
    if (auto queue = val.StringField(*meta, "metadata", "queue", 1024, false)) {
      if (!ValidQueuePath(*queue)) {
        val.Fail("metadata.queue",
                 "must be a path of at most " + std::to_string(kMaxQueueDepth) +
                     " names joined by '/', each of lower-case letters, digits and '-' (at most " +
                     std::to_string(kMaxQueueLength) + " characters in all), got " + Quote(*queue));
      } else {
        spec.queue = *queue;
      }
    }
    if (auto user = val.StringField(*meta, "metadata", "user", 256, false)) spec.user = *user;
    if (const Json* labels = val.Object(*meta, "metadata", "labels", false))
      ReadLabels(val, *labels, spec.labels);
  }

  const Json* s = val.Object(doc, "", "spec", true);
  if (s == nullptr || !kind_ok) return finish();
  const std::string P = "spec";
  const std::string kind_name(KindName(spec.kind));
  val.CheckKeys(*s, P, SpecKeysFor(spec.kind), kind_name);

  // Fields common to every kind.
  if (auto v = val.Int(*s, P, "priority", -kMaxPriority, kMaxPriority, false)) {
    spec.priority = static_cast<int>(*v);
  }
  spec.preemptible = spec.kind != WorkloadKind::kInference;
  if (auto v = val.Bool(*s, P, "preemptible")) spec.preemptible = *v;
  if (const Json* v = val.Find(*s, "gpuModels")) {
    if (v->is_object()) {
      // {MODEL: relative speed}: the models accepted and how fast the job runs on each.
      if (v->size() > kMaxGpuModelNames || v->empty()) {
        val.Fail("spec.gpuModels", "must name 1 to " + std::to_string(kMaxGpuModelNames) +
                                       " models, got " + std::to_string(v->size()));
      } else {
        for (const auto& [m, speed] : v->items()) {
          const std::string f = "spec.gpuModels." + m;
          if (!ValidModelName(m)) {
            val.Fail(f,
                     "must be a model name of letters, digits, '-', '_' or '.', got " + Quote(m));
          } else if (!speed.is_number() || !(speed.get<double>() > 0) ||
                     !(speed.get<double>() <= 1000)) {
            val.Fail(f,
                     "must be a relative speed, a number above 0 (e.g. 1.0 for the fastest, "
                     "0.5 for half as fast), got " +
                         Describe(speed));
          } else {
            spec.gpu_models.push_back(m);
            spec.gpu_model_speeds.push_back(speed.get<double>());
          }
        }
      }
    } else if (!v->is_array()) {
      val.Fail("spec.gpuModels",
               "must be a list of GPU model names or a mapping of model to relative speed, got " +
                   Describe(*v));
    } else if (v->size() > kMaxGpuModelNames) {
      val.Fail("spec.gpuModels", "must list at most " + std::to_string(kMaxGpuModelNames) +
                                     " models, got " + std::to_string(v->size()));
    } else {
      for (std::size_t i = 0; i < v->size(); ++i) {
        const std::string f = "spec.gpuModels[" + std::to_string(i) + "]";
        if (auto m = val.String((*v)[i], f, 64)) {
          if (!ValidModelName(*m)) {
            val.Fail(f,
                     "must be a model name of letters, digits, '-', '_' or '.', got " + Quote(*m));
          } else if (std::find(spec.gpu_models.begin(), spec.gpu_models.end(), *m) ==
                     spec.gpu_models.end()) {
            spec.gpu_models.push_back(*m);
          }
        }
      }
    }
  }
  if (const Json* t = val.Object(*s, P, "topology", false)) {
    val.CheckKeys(*t, "spec.topology", {"require", "prefer"}, "");
    if (auto r = val.StringField(*t, "spec.topology", "require", 64, false))
      spec.topology.require = *r;
    if (auto r = val.StringField(*t, "spec.topology", "prefer", 64, false))
      spec.topology.prefer = *r;
  }
  if (auto v = val.Int(*s, P, "gracePeriodSeconds", 0, kMaxGracePeriodSeconds, false)) {
    spec.grace_period_seconds = static_cast<int>(*v);
  }
  spec.max_restarts = spec.kind == WorkloadKind::kDevSession ? 0 : 3;
  if (auto v = val.Int(*s, P, "maxRestarts", 0, kMaxRestartsLimit, false)) {
    spec.max_restarts = static_cast<int>(*v);
  }
  if (auto v = val.Bool(*s, P, "shell")) spec.shell = *v;
  if (auto w = val.StringField(*s, P, "workingDir", kMaxPathBytes, false)) {
    if (w->front() != '/') {
      val.Fail("spec.workingDir", "must be an absolute path, got " + Quote(*w) +
                                      " (`tessera submit` resolves a relative one against the "
                                      "directory it runs in)");
    } else {
      spec.working_dir = *w;
    }
  }
  if (const Json* env = val.Object(*s, P, "env", false)) {
    if (env->size() > kMaxEnvEntries) {
      val.Fail("spec.env", "must have at most " + std::to_string(kMaxEnvEntries) +
                               " variables, got " + std::to_string(env->size()));
    } else {
      const auto& reserved = ReservedEnvNames();
      for (const auto& [key, value] : env->items()) {
        const std::string f = "spec.env." + (FirstInvalidUtf8(key) ? Quote(key) : key);
        if (!ValidEnvName(key)) {
          val.Fail(f, "variable names must match [A-Za-z_][A-Za-z0-9_]* (at most 256)");
          continue;
        }
        if (std::find(reserved.begin(), reserved.end(), key) != reserved.end()) {
          val.Fail(f, "is set by Tessera on every task and cannot be overridden");
          continue;
        }
        if (value.is_number() || value.is_boolean()) {
          spec.env[key] = value.is_number_float() ? Describe(value) : value.dump();
        } else if (auto str = val.String(value, f, kMaxEnvValueBytes, true)) {
          spec.env[key] = *str;
        }
      }
    }
  }
  if (auto v = val.Int(*s, P, "timeLimitSeconds", 0, kMaxTimeLimitSeconds, false)) {
    spec.time_limit_seconds = static_cast<int>(*v);
  }
  if (auto v = val.Int(*s, P, "expectedDurationSeconds", 1, kMaxTimeLimitSeconds, false)) {
    spec.expected_duration_seconds = static_cast<int>(*v);
  }
  ParseDependencies(val, *s, spec);
  TaskShape base;  // cpu and memory shared by every task of the job
  val.CpuMemory(*s, P, base);
  std::vector<std::string> command;
  const bool command_required =
      spec.kind != WorkloadKind::kDevSession && spec.kind != WorkloadKind::kRL;
  if (auto c = val.Command(*s, P, "command", command_required)) command = std::move(*c);
  if (spec.kind == WorkloadKind::kDevSession && command.empty()) command = {"sleep", "infinity"};

  auto checkpoint = [&] {
    if (const Json* c = val.Object(*s, P, "checkpoint", false)) {
      val.CheckKeys(*c, "spec.checkpoint", {"intervalSeconds", "dir"}, "");
      if (auto v = val.Int(*c, "spec.checkpoint", "intervalSeconds", 0,
                           kMaxCheckpointIntervalSeconds, false)) {
        spec.checkpoint_interval_seconds = static_cast<int>(*v);
      }
      if (auto d = val.StringField(*c, "spec.checkpoint", "dir", kMaxPathBytes, false)) {
        spec.checkpoint_dir = *d;
      }
    }
  };
  auto with_base = [&](TaskShape shape) {
    shape.cpu_milli = base.cpu_milli;
    shape.memory_mib = base.memory_mib;
    return shape;
  };

  switch (spec.kind) {
    case WorkloadKind::kTraining: {
      RoleSpec role{"worker", 1, {}, command, 1};
      auto workers = val.Int(*s, P, "workers", 1, kMaxTasksPerJob, false);
      if (const Json* e = val.Object(*s, P, "elastic", false)) {
        val.CheckKeys(*e, "spec.elastic", {"minWorkers", "maxWorkers"}, "");
        auto lo = val.Int(*e, "spec.elastic", "minWorkers", 1, kMaxTasksPerJob, true);
        auto hi = val.Int(*e, "spec.elastic", "maxWorkers", 1, kMaxTasksPerJob, true);
        if (lo && hi) {
          if (*lo > *hi) {
            val.Fail("spec.elastic", "minWorkers (" + std::to_string(*lo) +
                                         ") must not exceed maxWorkers (" + std::to_string(*hi) +
                                         ")");
          } else {
            spec.min_workers = static_cast<int>(*lo);
            spec.max_workers = static_cast<int>(*hi);
            if (!workers && !s->contains("workers")) workers = *hi;
            if (workers && (*workers < *lo || *workers > *hi)) {
              val.Fail("spec.workers", "must be within elastic [" + std::to_string(*lo) + ", " +
                                           std::to_string(*hi) + "], got " +
                                           std::to_string(*workers));
            }
          }
        }
      } else if (!workers && !s->contains("workers")) {
        val.Fail("spec.workers", "required");
      }
      if (workers) role.count = static_cast<int>(*workers);
      if (auto g = val.Gpus(*s, P, "gpusPerWorker", true, false, 0)) role.shape = with_base(*g);
      if (auto v = val.Int(*s, P, "processesPerWorker", 1, kMaxProcessesPerWorker, false)) {
        role.processes_per_worker = static_cast<int>(*v);
      }
      if (auto p = val.StringField(*s, P, "successPolicy", 64, false)) {
        if (*p == "Rank0") {
          spec.success_policy = SuccessPolicy::kRank0;
        } else if (*p != "AllWorkers") {
          val.Fail("spec.successPolicy", "must be AllWorkers or Rank0, got " + Quote(*p));
        }
      }
      if (auto p = val.StringField(*s, P, "recovery", 64, false)) {
        spec.recovery = ParseRecoveryMode(*p);
        if (!spec.recovery) {
          val.Fail("spec.recovery",
                   "must be one of " + std::string(kRecoveryModeNames) + ", got " + Quote(*p));
        }
      }
      checkpoint();
      spec.roles.push_back(std::move(role));
      break;
    }
    case WorkloadKind::kInference: {
      RoleSpec role{"replica", 1, {}, command, 1};
      if (const Json* r = val.Find(*s, "replicas")) {
        if (r->is_object()) {
          val.CheckKeys(*r, "spec.replicas", {"min", "max", "autoscaling"}, "");
          // 0 only for an autoscaled service, which starts a replica on the first request.
          auto lo = val.Int(*r, "spec.replicas", "min", 0, kMaxTasksPerJob, true);
          auto hi = val.Int(*r, "spec.replicas", "max", 1, kMaxTasksPerJob, false);
          if (lo) {
            if (!hi) hi = lo;
            if (*hi < *lo) {
              val.Fail("spec.replicas.max", "must be at least min (" + std::to_string(*lo) +
                                                "), got " + std::to_string(*hi));
            } else {
              spec.replicas_min = static_cast<int>(*lo);
              spec.replicas_max = static_cast<int>(*hi);
            }
          }
        } else if (auto n = val.Int(*s, P, "replicas", 1, kMaxTasksPerJob, false)) {
          spec.replicas_min = spec.replicas_max = static_cast<int>(*n);
        }
      } else {
        spec.replicas_min = spec.replicas_max = 1;
      }
      ParseServiceAutoscaling(val, *s, spec);
      // An autoscaled service has one unit per replica it may have (JobSpec::IndependentTasks).
      role.count =
          spec.autoscaling ? std::max(1, spec.replicas_max) : std::max(1, spec.replicas_min);
      if (auto g = val.Gpus(*s, P, "gpusPerReplica", !s->contains("gpuMemory"), true, 1)) {
        role.shape = with_base(*g);
        ApplyGpuMemory(val, *s, spec.gpu_models, "gpusPerReplica", role.shape);
      }
      if (const Json* slo = val.Object(*s, P, "slo", false)) {
        val.CheckKeys(*slo, "spec.slo", {"ttftMs", "tbtMs", "latencyMs", "percentile"}, "");
        // latencyMs is the older name of ttftMs; both at once would be ambiguous.
        const char* ttft_key = slo->contains("ttftMs") ? "ttftMs" : "latencyMs";
        if (slo->contains("ttftMs") && slo->contains("latencyMs")) {
          val.Fail("spec.slo.latencyMs", "is the older name of ttftMs; give only ttftMs");
        } else if (auto v =
                       val.Int(*slo, "spec.slo", ttft_key, 1, 3'600'000, !slo->contains("tbtMs"))) {
          spec.slo_latency_ms = static_cast<int>(*v);
        }
        if (auto v = val.Int(*slo, "spec.slo", "tbtMs", 1, 3'600'000, false)) {
          spec.slo_tbt_ms = static_cast<int>(*v);
        }
        if (const Json* p = val.Find(*slo, "percentile")) {
          if (!p->is_number() || !(p->get<double>() > 0 && p->get<double>() < 100)) {
            val.Fail("spec.slo.percentile",
                     "must be a number above 0 and below 100, got " + Describe(*p));
          } else {
            spec.slo_percentile = p->get<double>();
          }
        } else {
          spec.slo_percentile = 99;
        }
      }
      if (const Json* routing = val.Object(*s, P, "routing", false)) {
        ParseRouting(val, *routing, spec);
      }
      if (spec.autoscaling && spec.autoscaling->metric == AutoscaleMetric::kTtftP90 &&
          spec.slo_latency_ms <= 0) {
        val.Fail("spec.autoscaling.metric", "ttft-p90 scales against spec.slo.ttftMs, not given");
      }
      spec.roles.push_back(std::move(role));
      break;
    }
    case WorkloadKind::kBatch: {
      RoleSpec role{"task", 1, {}, command, 1};
      if (auto v = val.Int(*s, P, "tasks", 1, kMaxTasksPerJob, true))
        role.count = static_cast<int>(*v);
      if (auto v = val.Int(*s, P, "parallelism", 0, kMaxTasksPerJob, false))
        spec.parallelism = static_cast<int>(*v);
      if (auto g = val.Gpus(*s, P, "gpusPerTask", !s->contains("gpuMemory"), true, 1)) {
        role.shape = with_base(*g);
        ApplyGpuMemory(val, *s, spec.gpu_models, "gpusPerTask", role.shape);
      }
      spec.roles.push_back(std::move(role));
      break;
    }
    case WorkloadKind::kDevSession: {
      RoleSpec role{"session", 1, {}, command, 1};
      if (auto g = val.Gpus(*s, P, "gpus", false, true, 1)) {
        role.shape = with_base(*g);
        ApplyGpuMemory(val, *s, spec.gpu_models, "gpus", role.shape);
      }
      spec.roles.push_back(std::move(role));
      break;
    }
    case WorkloadKind::kRL: {
      checkpoint();
      const Json* roles = val.Find(*s, "roles");
      if (roles == nullptr) {
        val.Fail("spec.roles", "required (a list of {name, workers, gpusPerWorker, command})");
      } else if (!roles->is_array() || roles->empty()) {
        val.Fail("spec.roles", "must be a non-empty list of roles, got " + Describe(*roles));
      } else if (roles->size() > kMaxRoles) {
        val.Fail("spec.roles", "must have at most " + std::to_string(kMaxRoles) + " roles, got " +
                                   std::to_string(roles->size()));
      } else {
        std::set<std::string> names;
        for (std::size_t i = 0; i < roles->size(); ++i) {
          const std::string rp = "spec.roles[" + std::to_string(i) + "]";
          const Json& r = (*roles)[i];
          if (!r.is_object()) {
            val.Fail(rp, "must be a mapping, got " + Describe(r));
            continue;
          }
          val.CheckKeys(r, rp,
                        {"name", "workers", "gpusPerWorker", "command", "processesPerWorker", "cpu",
                         "memory", "affinity"},
                        "a role");
          RoleSpec role;
          if (auto n = val.StringField(r, rp, "name", 1024, true)) {
            if (!ValidJobName(*n)) {
              val.Fail(rp + ".name",
                       "must consist of lower-case letters, digits and '-' (at "
                       "most 63), got " +
                           Quote(*n));
            } else if (!names.insert(*n).second) {
              val.Fail(rp + ".name", "duplicate role name " + Quote(*n));
            } else {
              role.name = *n;
            }
          }
          if (auto v = val.Int(r, rp, "workers", 1, kMaxTasksPerJob, true))
            role.count = static_cast<int>(*v);
          if (auto g = val.Gpus(r, rp, "gpusPerWorker", true, false, 0)) role.shape = *g;
          role.shape.cpu_milli = base.cpu_milli;
          role.shape.memory_mib = base.memory_mib;
          val.CpuMemory(r, rp, role.shape);
          if (auto v = val.Int(r, rp, "processesPerWorker", 1, kMaxProcessesPerWorker, false)) {
            role.processes_per_worker = static_cast<int>(*v);
          }
          if (auto c = val.Command(r, rp, "command", command.empty())) {
            role.command = std::move(*c);
          } else {
            role.command = command;
          }
          if (const Json* a = val.Object(r, rp, "affinity", false)) {
            // {ROLE: LEVEL}: this role's tasks and ROLE's share one domain of LEVEL.
            for (const auto& [other, level] : a->items()) {
              const std::string f = rp + ".affinity." + other;
              if (!level.is_string() || level.get<std::string>().empty() ||
                  level.get<std::string>().size() > 64) {
                val.Fail(f, "must name a topology level (node, leaf, spine, ...), got " +
                                Describe(level));
              } else {
                role.affinity.push_back({other, level.get<std::string>()});
              }
            }
          }
          spec.roles.push_back(std::move(role));
        }
        // Affinities name other roles of this job.
        for (std::size_t i = 0; i < spec.roles.size(); ++i) {
          for (const auto& a : spec.roles[i].affinity) {
            const bool known = a.role != spec.roles[i].name &&
                               std::any_of(spec.roles.begin(), spec.roles.end(),
                                           [&](const RoleSpec& o) { return o.name == a.role; });
            if (!known) {
              val.Fail("spec.roles[" + std::to_string(i) + "].affinity." + a.role,
                       "must name another role of this job");
            }
          }
        }
      }
      break;
    }
  }

  if (val.ok()) {
    long long total = 0;
    for (const auto& r : spec.roles) total += r.count;
    if (total > kMaxTasksPerJob) {
      val.Fail("spec", "the job has " + std::to_string(total) + " tasks; at most " +
                           std::to_string(kMaxTasksPerJob) + " are allowed");
    }
    if (spec.shell) {
      for (const auto& r : spec.roles) {
        if (r.command.empty() || r.command[0].empty()) {
          val.Fail("spec.command",
                   "with shell: true, the first element is the script and must "
                   "not be empty");
          break;
        }
      }
    }
  }
  return finish();
}

Result<JobSpec> ParseJobSpec(std::string_view text, std::vector<FieldError>* errors) {
  auto fail = [&](std::string field, std::string reason) -> Result<JobSpec> {
    FieldError e{std::move(field), std::move(reason)};
    if (errors != nullptr) *errors = {e};
    return InvalidArgument(e.ToString());
  };
  if (text.size() > kMaxSpecBytes) {
    return fail("", "the spec is " + std::to_string(text.size()) + " bytes; at most " +
                        std::to_string(kMaxSpecBytes) + " are allowed");
  }
  if (auto bad = FirstInvalidUtf8(text)) {
    return fail("", "the spec is not valid UTF-8: byte " + std::to_string(*bad) + " (" +
                        LineColumnOf(text, *bad) + ")");
  }
  if (text.find('\0') != std::string_view::npos) {
    return fail("", "the spec contains a NUL byte at " + LineColumnOf(text, text.find('\0')));
  }
  auto doc = ParseDocument(text);
  if (!doc) return fail("", doc.error().message);
  return JobSpecFromJson(*doc, errors);
}

Json JobSpecToJson(const JobSpec& spec) {
  Json meta = {{"name", spec.name}, {"queue", spec.queue}};
  if (!spec.user.empty()) meta["user"] = spec.user;
  if (!spec.labels.empty()) meta["labels"] = spec.labels;
  Json s = Json::object();
  s["priority"] = spec.priority;
  s["preemptible"] = spec.preemptible;
  if (!spec.gpu_model_speeds.empty()) {
    Json m = Json::object();
    for (std::size_t i = 0; i < spec.gpu_models.size() && i < spec.gpu_model_speeds.size(); ++i) {
      m[spec.gpu_models[i]] = spec.gpu_model_speeds[i];
    }
    s["gpuModels"] = m;
  } else if (!spec.gpu_models.empty()) {
    s["gpuModels"] = spec.gpu_models;
  }
  if (!spec.topology.require.empty() || !spec.topology.prefer.empty()) {
    Json t = Json::object();
    if (!spec.topology.require.empty()) t["require"] = spec.topology.require;
    if (!spec.topology.prefer.empty()) t["prefer"] = spec.topology.prefer;
    s["topology"] = t;
  }
  s["gracePeriodSeconds"] = spec.grace_period_seconds;
  s["maxRestarts"] = spec.max_restarts;
  if (!spec.env.empty()) s["env"] = spec.env;
  if (spec.shell) s["shell"] = true;
  if (!spec.working_dir.empty()) s["workingDir"] = spec.working_dir;
  if (spec.time_limit_seconds > 0) s["timeLimitSeconds"] = spec.time_limit_seconds;
  if (spec.expected_duration_seconds > 0)
    s["expectedDurationSeconds"] = spec.expected_duration_seconds;
  if (!spec.dependencies.empty()) {
    Json deps = Json::array();
    for (const auto& d : spec.dependencies) {
      deps.push_back(
          {{"type", std::string(DependencyTypeName(d.type))}, {"job", d.queue + "/" + d.name}});
    }
    s["dependencies"] = std::move(deps);
  }
  auto gpus_value = [](const TaskShape& shape) -> Json {
    if (shape.IsShare()) return MilliText(shape.gpu_milli);
    return shape.gpus;
  };
  auto put_cpu_memory = [](Json& obj, const TaskShape& shape) {
    if (shape.cpu_milli > 0) obj["cpu"] = std::to_string(shape.cpu_milli) + "m";
    if (shape.memory_mib > 0) obj["memory"] = std::to_string(shape.memory_mib) + "Mi";
  };
  auto put_checkpoint = [&] {
    if (spec.checkpoint_interval_seconds > 0 || !spec.checkpoint_dir.empty()) {
      Json c = Json::object();
      c["intervalSeconds"] = spec.checkpoint_interval_seconds;
      if (!spec.checkpoint_dir.empty()) c["dir"] = spec.checkpoint_dir;
      s["checkpoint"] = c;
    }
  };
  if (spec.kind != WorkloadKind::kRL && !spec.roles.empty()) {
    const RoleSpec& role = spec.roles.front();
    s["command"] = role.command;
    put_cpu_memory(s, role.shape);
    switch (spec.kind) {
      case WorkloadKind::kTraining:
        s["workers"] = role.count;
        s["gpusPerWorker"] = gpus_value(role.shape);
        if (role.processes_per_worker != 1) s["processesPerWorker"] = role.processes_per_worker;
        if (spec.success_policy == SuccessPolicy::kRank0) s["successPolicy"] = "Rank0";
        if (spec.recovery) s["recovery"] = std::string(RecoveryModeName(*spec.recovery));
        if (spec.max_workers > 0) {
          s["elastic"] = {{"minWorkers", spec.min_workers}, {"maxWorkers", spec.max_workers}};
        }
        put_checkpoint();
        break;
      case WorkloadKind::kInference:
        s["replicas"] = {{"min", spec.replicas_min}, {"max", spec.replicas_max}};
        s["gpusPerReplica"] = gpus_value(role.shape);
        if (spec.slo_latency_ms > 0 || spec.slo_tbt_ms > 0) {
          s["slo"] = {{"percentile", spec.slo_percentile}};
          if (spec.slo_latency_ms > 0) s["slo"]["ttftMs"] = spec.slo_latency_ms;
          if (spec.slo_tbt_ms > 0) s["slo"]["tbtMs"] = spec.slo_tbt_ms;
        }
        if (spec.autoscaling) {
          const AutoscalingSpec& a = *spec.autoscaling;
          s["autoscaling"] = {
              {"metric", AutoscaleMetricName(a.metric)},
              {"target", a.target},
              {"scaleDownStabilizationSeconds", a.scale_down_stabilization_seconds}};
          if (a.policy == AutoscalePolicy::kKpa) {
            s["autoscaling"]["policy"] = AutoscalePolicyName(a.policy);
            s["autoscaling"]["stableWindowSeconds"] = a.stable_window_seconds;
            s["autoscaling"]["panicWindowPercentage"] = a.panic_window_percentage;
            s["autoscaling"]["panicThresholdPercentage"] = a.panic_threshold_percentage;
          } else {
            s["autoscaling"]["scaleUpStabilizationSeconds"] = a.scale_up_stabilization_seconds;
          }
        }
        if (!spec.routing_policy.empty() || spec.routing_block_tokens != 16) {
          s["routing"] = {{"blockTokens", spec.routing_block_tokens}};
          if (!spec.routing_policy.empty()) s["routing"]["policy"] = spec.routing_policy;
        }
        break;
      case WorkloadKind::kBatch:
        s["tasks"] = role.count;
        s["gpusPerTask"] = gpus_value(role.shape);
        if (spec.parallelism > 0) s["parallelism"] = spec.parallelism;
        break;
      case WorkloadKind::kDevSession:
        s["gpus"] = gpus_value(role.shape);
        break;
      case WorkloadKind::kRL:
        break;
    }
  } else {
    Json roles = Json::array();
    for (const auto& role : spec.roles) {
      Json r = {{"name", role.name},
                {"workers", role.count},
                {"gpusPerWorker", gpus_value(role.shape)},
                {"command", role.command}};
      if (role.processes_per_worker != 1) r["processesPerWorker"] = role.processes_per_worker;
      put_cpu_memory(r, role.shape);
      if (!role.affinity.empty()) {
        Json a = Json::object();
        for (const auto& x : role.affinity) a[x.role] = x.level;
        r["affinity"] = a;
      }
      roles.push_back(std::move(r));
    }
    s["roles"] = std::move(roles);
    put_checkpoint();
  }
  return Json{{"apiVersion", "tessera/v1"},
              {"kind", std::string(KindName(spec.kind))},
              {"metadata", std::move(meta)},
              {"spec", std::move(s)}};
}

namespace {

// Resolves a relative spec.workingDir of `tree` against `base_dir`; false when there is none.
bool ResolveWorkingDir(Json& tree, const std::string& base_dir) {
  if (!tree.is_object() || !tree.contains("spec") || !tree["spec"].is_object()) return false;
  auto& spec = tree["spec"];
  if (!spec.contains("workingDir") || !spec["workingDir"].is_string()) return false;
  const std::string dir = spec["workingDir"].get<std::string>();
  if (dir.empty() || dir.front() == '/') return false;
  std::string resolved = (std::filesystem::path(base_dir) / dir).lexically_normal().string();
  while (resolved.size() > 1 && resolved.back() == '/') resolved.pop_back();
  spec["workingDir"] = resolved;
  return true;
}

}  // namespace

std::string WithAbsoluteWorkingDir(const std::string& text, const std::string& base_dir) {
  auto tree = ParseDocument(text);
  if (!tree || !ResolveWorkingDir(*tree, base_dir)) return text;
  return DumpJson(*tree);
}

std::string SubmissionBody(const std::string& text, const std::string& base_dir) {
  if (text.size() > kMaxSpecBytes || FirstInvalidUtf8(text) || text.find('\0') != std::string::npos)
    return text;
  auto tree = ParseDocument(text);
  if (!tree || !tree->is_object()) return text;
  ResolveWorkingDir(*tree, base_dir);
  return DumpJson(*tree);
}

}  // namespace tessera
