#include "spec/engine_profile_yaml.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "spec/document.h"

namespace tessera {

namespace {

using Json = nlohmann::json;

constexpr std::size_t kMaxProfileBytes = 1 << 20;

struct NumberField {
  std::string_view key;
  double EngineProfile::*real = nullptr;
  std::int64_t EngineProfile::*whole = nullptr;
  int EngineProfile::*small = nullptr;
  bool zero_ok = false;
};

const NumberField kNumbers[] = {
    {"stepBaseUs", &EngineProfile::step_base_us},
    {"prefillUsPerToken", &EngineProfile::prefill_us_per_token},
    {"prefillAttentionUsPerKtoken", &EngineProfile::prefill_attention_us_per_ktoken, {}, {}, true},
    {"decodeUsPerSequence", &EngineProfile::decode_us_per_sequence, {}, {}, true},
    {"decodeUsPerContextToken", &EngineProfile::decode_us_per_context_token, {}, {}, true},
    {"maxBatchSequences", {}, {}, &EngineProfile::max_batch_sequences},
    {"maxBatchedTokens", {}, {}, &EngineProfile::max_batched_tokens},
    {"maxContextTokens", {}, &EngineProfile::max_context_tokens},
    {"kvCacheTokens", {}, &EngineProfile::kv_cache_tokens},
    {"hostCacheTokens", {}, &EngineProfile::host_cache_tokens, {}, true},
    {"kvBytesPerToken", &EngineProfile::kv_bytes_per_token},
    {"pcieGBPerS", &EngineProfile::pcie_gb_per_s},
};

Status SetNumber(const NumberField& f, const Json& v, EngineProfile* p) {
  const std::string field = "spec." + std::string(f.key);
  if (!v.is_number()) return InvalidArgument(field + ": must be a number");
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < 0 || (x == 0 && !f.zero_ok)) {
    return InvalidArgument(field + (f.zero_ok ? ": must be >= 0" : ": must be positive"));
  }
  if (f.real != nullptr) {
    p->*f.real = x;
    return {};
  }
  if (!v.is_number_integer() && !v.is_number_unsigned()) {
    return InvalidArgument(field + ": must be a whole number");
  }
  if (f.small != nullptr) {
    if (x > 1'000'000) return InvalidArgument(field + ": must be at most 1000000");
    p->*f.small = v.get<int>();
  } else {
    p->*f.whole = v.get<std::int64_t>();
  }
  return {};
}

Status SetText(const Json& spec, std::string_view key, std::string* out) {
  if (!spec.contains(key)) return {};
  const Json& v = spec.at(key);
  if (!v.is_string() || v.get_ref<const std::string&>().empty()) {
    return InvalidArgument("spec." + std::string(key) + ": must be a non-empty string");
  }
  *out = v.get<std::string>();
  return {};
}

Result<EngineProfile> FromJson(const Json& doc) {
  if (!doc.is_object()) return InvalidArgument("EngineProfile: the document must be a mapping");
  for (const auto& [key, _] : doc.items()) {
    if (key != "apiVersion" && key != "kind" && key != "metadata" && key != "spec") {
      return InvalidArgument(key + ": unknown field for EngineProfile");
    }
  }
  if (doc.value("apiVersion", "") != "tessera/v1") {
    return InvalidArgument("apiVersion: must be tessera/v1");
  }
  if (doc.value("kind", "") != "EngineProfile")
    return InvalidArgument("kind: must be EngineProfile");
  EngineProfile p;
  const Json meta = doc.value("metadata", Json::object());
  if (!meta.is_object() || !meta.contains("name") || !meta["name"].is_string() ||
      meta["name"].get_ref<const std::string&>().empty()) {
    return InvalidArgument("metadata.name: is required (a non-empty string)");
  }
  p.name = meta["name"].get<std::string>();
  const Json spec = doc.value("spec", Json::object());
  if (!spec.is_object()) return InvalidArgument("spec: must be a mapping");
  for (const auto& [key, value] : spec.items()) {
    if (key == "model" || key == "gpu") continue;
    const NumberField* field = nullptr;
    for (const NumberField& f : kNumbers) {
      if (f.key == key) field = &f;
    }
    if (field == nullptr)
      return InvalidArgument("spec." + key + ": unknown field for EngineProfile");
    if (auto ok = SetNumber(*field, value, &p); !ok) return std::unexpected(ok.error());
  }
  if (auto ok = SetText(spec, "model", &p.model); !ok) return std::unexpected(ok.error());
  if (auto ok = SetText(spec, "gpu", &p.gpu); !ok) return std::unexpected(ok.error());
  if (p.max_batched_tokens <= p.max_batch_sequences) {
    return InvalidArgument("spec.maxBatchedTokens: must exceed spec.maxBatchSequences");
  }
  return p;
}

}  // namespace

Result<EngineProfile> ParseEngineProfile(std::string_view text) {
  auto doc = ParseDocument(text);
  if (!doc) return std::unexpected(doc.error());
  return FromJson(*doc);
}

std::vector<std::string> BuiltinEngineProfileNames() { return {EngineProfile{}.name}; }

Result<EngineProfile> LoadEngineProfile(const std::string& name_or_path) {
  if (name_or_path == EngineProfile{}.name) return EngineProfile{};
  std::ifstream in(name_or_path, std::ios::binary);
  if (!in) {
    return NotFound(name_or_path + ": neither a built-in profile (" + EngineProfile{}.name +
                    ") nor a readable file");
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().size() > kMaxProfileBytes) return InvalidArgument(name_or_path + ": over 1 MiB");
  auto p = ParseEngineProfile(text.str());
  if (!p) return InvalidArgument(name_or_path + ": " + p.error().message);
  return p;
}

}  // namespace tessera
