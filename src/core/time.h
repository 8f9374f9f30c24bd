// Time in Tessera is an integer count of milliseconds (`Tick`), on a virtual clock in the
// simulator and on the wall clock in the controller. Integer time keeps event order exact.
#pragma once

#include <cstdint>

namespace tessera {

using Tick = std::int64_t;  // milliseconds

inline constexpr Tick kMillisecond = 1;
inline constexpr Tick kSecond = 1000;
inline constexpr Tick kMinute = 60 * kSecond;
inline constexpr Tick kHour = 60 * kMinute;
inline constexpr Tick kDay = 24 * kHour;
inline constexpr Tick kNever = INT64_MAX / 4;  // far enough to add durations without overflow

inline constexpr double ToSeconds(Tick t) { return static_cast<double>(t) / kSecond; }
// Saturates at ±kNever (and takes NaN as 0): a converted double out of Tick's range would be
// undefined behaviour, and an absurd duration from a file must not become one.
inline constexpr Tick FromSeconds(double s) {
  constexpr double kLimit = static_cast<double>(kNever) / kSecond;
  if (!(s == s)) return 0;
  if (s >= kLimit) return kNever;
  if (s <= -kLimit) return -kNever;
  return static_cast<Tick>(s * kSecond + (s >= 0 ? 0.5 : -0.5));
}

}  // namespace tessera
