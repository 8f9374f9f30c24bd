// Engine profiles as YAML (or JSON): the performance figures of one engine serving one model on
// one GPU model, for the serving experiment and the simulated engine (docs/serving.md):
//
//   apiVersion: tessera/v1
//   kind: EngineProfile
//   metadata: {name: llama3-8b-h100}
//   spec: {model: ..., gpu: ..., stepBaseUs: 6200, prefillUsPerToken: 28, ...}
//
// Fields of spec left out keep the default profile's value. Errors name the field and why.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/engine_profile.h"
#include "core/status.h"

namespace tessera {

Result<EngineProfile> ParseEngineProfile(std::string_view text);

// The built-in profiles by name (llama3-8b-h100), or a YAML file's.
Result<EngineProfile> LoadEngineProfile(const std::string& name_or_path);
std::vector<std::string> BuiltinEngineProfileNames();

}  // namespace tessera
