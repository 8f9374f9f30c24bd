// What the harnesses in tests/fuzz/ share: the input as text, a check that reports a broken
// property as a finding (abort, which both libFuzzer and the replay driver report), and a
// scratch file for the readers that take a path (the trace readers, LoadCluster).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace tessera::fuzz {

inline std::string_view Text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A property every input must keep; false is a finding.
#define FUZZ_CHECK(cond, what)                                                           \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "fuzz finding at %s:%d: %s: %s\n", __FILE__, __LINE__, #cond, \
                   std::string(what).c_str());                                           \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

// Writes `bytes` to one file per process (rewritten for every input) and returns its path,
// named with `suffix` (readers that pick a format from the extension need it).
inline std::string ScratchFile(std::string_view bytes, const std::string& suffix = "") {
  // One directory per process, removed when it exits.
  struct Dir {
    std::filesystem::path path = std::filesystem::temp_directory_path() /
                                 ("tessera-fuzz-" + std::to_string(static_cast<long>(getpid())));
    Dir() { std::filesystem::create_directories(path); }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Dir dir;
  const std::string path = (dir.path / ("input" + suffix)).string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

}  // namespace tessera::fuzz
