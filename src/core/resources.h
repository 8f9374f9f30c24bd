// Resource vectors in fixed point: milli-CPU, MiB of memory and milli-GPU. Integer arithmetic
// means a GPU split into shares always adds back up to exactly 1000 milli, and quota checks
// never drift.
#pragma once

#include <cstdint>

namespace tessera {

inline constexpr std::int64_t kMilliPerGpu = 1000;

struct Resources {
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;
  std::int64_t gpu_milli = 0;

  Resources& operator+=(const Resources& o) {
    cpu_milli += o.cpu_milli;
    memory_mib += o.memory_mib;
    gpu_milli += o.gpu_milli;
    return *this;
  }
  Resources& operator-=(const Resources& o) {
    cpu_milli -= o.cpu_milli;
    memory_mib -= o.memory_mib;
    gpu_milli -= o.gpu_milli;
    return *this;
  }
  friend Resources operator+(Resources a, const Resources& b) { return a += b; }
  friend Resources operator-(Resources a, const Resources& b) { return a -= b; }
  friend Resources operator*(Resources a, std::int64_t k) {
    a.cpu_milli *= k;
    a.memory_mib *= k;
    a.gpu_milli *= k;
    return a;
  }
  friend bool operator==(const Resources&, const Resources&) = default;

  // True when every component of `need` is at most this one's.
  bool Covers(const Resources& need) const {
    return cpu_milli >= need.cpu_milli && memory_mib >= need.memory_mib &&
           gpu_milli >= need.gpu_milli;
  }
  bool NonNegative() const { return cpu_milli >= 0 && memory_mib >= 0 && gpu_milli >= 0; }
};

}  // namespace tessera
