// Turning the text of a spec (YAML or JSON) into a JSON tree, and a JSON tree back into YAML
// for people. YAML scalars are typed by the YAML 1.2 core schema: plain `16` is an integer,
// quoted "16" is a string, so a wrong type is reported as such. Duplicate keys, numbers that
// are not finite doubles (1e309, .inf) or integers outside the signed 64-bit range (2^63),
// anchors that expand past a size limit, and nesting deeper than a limit are refused, in YAML
// and JSON (spec/strict_json.h) alike, naming the field. Never throws.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tessera {

inline constexpr std::size_t kMaxDocumentNodes = 100'000;
inline constexpr int kMaxDocumentDepth = 32;

// Parses one document. JSON when the first non-blank character is '{' or '[', else YAML.
// Errors name the line and column where known.
Result<nlohmann::json> ParseDocument(std::string_view text);

// Splits a YAML stream on "---" separator lines into documents, dropping empty ones.
std::vector<std::string> SplitYamlDocuments(std::string_view text);

// `value` as block-style YAML (for `-o yaml`).
std::string ToYaml(const nlohmann::json& value);

// `value` as JSON text; invalid UTF-8 in strings is replaced, never thrown on.
std::string DumpJson(const nlohmann::json& value, int indent = -1);

}  // namespace tessera
