// JSON text from users and agents, parsed strictly. nlohmann's parser keeps the last of two
// equal keys and turns 2^63 into an unsigned integer that every `get<int64_t>` wraps; here a
// key given twice in one object, a number that is not a finite double (1e309), an integer
// outside the signed 64-bit range (2^63) and nesting past kMaxDocumentDepth are refused, and
// the error names the field ("spec.workers") and the reason. Never throws.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "core/status.h"

namespace tessera {

// Errors start with "invalid JSON: " (syntax), or with the field's path for a duplicate key or
// an absurd number: `spec.env.A: duplicate key (a key may appear once in an object)`.
Result<nlohmann::json> ParseStrictJson(std::string_view text);

}  // namespace tessera
