#include "serve/prompt_tokens.h"

namespace tessera::serve {

namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::int32_t WordToken(std::string_view word) {
  std::uint64_t number = 0;
  bool digits = word.size() <= 10;
  for (char c : word) {
    if (c < '0' || c > '9') {
      digits = false;
      break;
    }
    number = number * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (digits && number < (1ull << 31)) return static_cast<std::int32_t>(number);
  std::uint32_t h = 2166136261u;  // FNV-1a, 32 bits
  for (char c : word) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return static_cast<std::int32_t>(h & 0x7fffffffu);
}

}  // namespace

void TokenizePrompt(std::string_view text, std::vector<std::int32_t>* tokens) {
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && IsSpace(text[i])) ++i;
    std::size_t j = i;
    while (j < text.size() && !IsSpace(text[j])) ++j;
    if (j > i) tokens->push_back(WordToken(text.substr(i, j - i)));
    i = j;
  }
}

std::vector<std::int32_t> TokenizePrompt(std::string_view text) {
  std::vector<std::int32_t> tokens;
  TokenizePrompt(text, &tokens);
  return tokens;
}

}  // namespace tessera::serve
