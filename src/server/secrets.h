// Random secrets and their digests (OpenSSL's libcrypto): bearer tokens, node credentials and
// the digests the controller keeps instead of the secrets themselves.
//
// Thread-safety: every function is thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace tessera {

// A fresh secret of `bytes` random bytes from the OS's CSPRNG, as lower-case hex (so it fits
// a CSV field, an HTTP header and a file without quoting).
Result<std::string> RandomSecret(std::size_t bytes = 32);

// SHA-256 of `text` as 64 lower-case hex digits.
std::string Sha256Hex(std::string_view text);

// Equality of two strings in time that depends only on their lengths.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// Writes `text` to `path` through a temporary file and a rename, with mode 0600, so a reader
// sees the old or the new file and no other user can read it.
Status WritePrivateFile(const std::string& path, const std::string& text);

}  // namespace tessera
