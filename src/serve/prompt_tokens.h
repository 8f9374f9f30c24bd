// The deterministic "tokenizer" of the simulated engine and of the gateway's router: a prompt is
// cut at ASCII whitespace into words, and each word is one token. A word of decimal digits below
// 2^31 is that token id itself; any other word's id is the FNV-1a hash of its bytes folded to
// 31 bits. So a client can build a prompt of given token ids ("17 4 99 ..."), and two prompts
// share a cached block exactly when they share its words. Real engines tokenize differently; the
// gateway only needs block hashes that agree with the engine's KV events, or, in front of an
// engine that sends none, that equal prompt prefixes give equal hashes (they do). Pure.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace tessera::serve {

// Appends the tokens of `text` to `tokens`.
void TokenizePrompt(std::string_view text, std::vector<std::int32_t>* tokens);
std::vector<std::int32_t> TokenizePrompt(std::string_view text);

}  // namespace tessera::serve
