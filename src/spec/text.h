// Checks on untrusted text: UTF-8 validity, control bytes, and a printable rendering of a
// string for error messages (quoted, truncated, with non-printable bytes escaped).
#pragma once

#include <cstddef>
#include <expected>
#include <optional>
#include <string>
#include <string_view>

namespace tessera {

// The byte offset of the first byte that is not part of well-formed UTF-8 (no overlong
// forms, no surrogates, nothing above U+10FFFF), or nullopt when `text` is valid.
std::optional<std::size_t> FirstInvalidUtf8(std::string_view text);

// 1-based line and column of byte `offset` in `text`.
std::string LineColumnOf(std::string_view text, std::size_t offset);

// `s` in double quotes for an error message: at most `max` bytes, control and non-UTF-8
// bytes as \xNN.
std::string Quote(std::string_view s, std::size_t max = 64);

// Why text is not a finite number.
enum class NumberError { kEmpty, kNotANumber, kOutOfRange, kNaN, kInfinite };
// A finite number in plain decimal or exponent notation ("12", "-3.5", "1e6", "+7"); no blanks.
std::expected<double, NumberError> ParseFiniteNumber(std::string_view text);

}  // namespace tessera
