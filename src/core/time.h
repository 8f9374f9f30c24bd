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
inline constexpr Tick FromSeconds(double s) { return static_cast<Tick>(s * kSecond + (s >= 0 ? 0.5 : -0.5)); }

}  // namespace tessera
