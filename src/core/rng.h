// A small seeded generator (SplitMix64) with its own integer and real draws, so that the same
// seed gives the same sequence on every platform and standard library.
#pragma once

#include <cstdint>
#include <string_view>

namespace tessera {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}

  std::uint64_t Next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n). REQUIRES: n > 0.
  std::uint64_t Uniform(std::uint64_t n) {
    // Rejection sampling on the top of the range: unbiased and portable.
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    std::uint64_t x = Next();
    while (x >= limit) x = Next();
    return x % n;
  }
  // Uniform in [0, 1).
  double Real() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

  // A seed for an independent stream, e.g. one per scheduling cycle.
  static std::uint64_t Mix(std::uint64_t a, std::uint64_t b) {
    Rng r(a ^ (b * 0x9E3779B97F4A7C15ULL));
    return r.Next();
  }
  // Stable 64-bit FNV-1a of `text`: the same on every run, build and platform (std::hash is
  // not), for seeds and keys derived from names.
  static std::uint64_t HashText(std::string_view text) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char c : text) {
      h ^= c;
      h *= 0x100000001b3ULL;
    }
    return h;
  }

 private:
  std::uint64_t state_;
};

}  // namespace tessera
