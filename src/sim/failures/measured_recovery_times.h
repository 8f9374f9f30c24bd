// Written by `tessera bench recovery --write-preset` (1000 emulated nodes of simulated 8xH100, gang of 16 sleep workers, heartbeat timeout 10 s, 2 CPUs, 3 round(s) per policy). The live controller's
// recovery times on this machine, for `tessera sim --experiment failures --recovery-times
// measured` (docs/failures.md): detection is the heartbeat timeout plus the liveness check;
// restart is what spares take after detection (warm nodes); cold start is what replace takes
// beyond that; the per-node cold start is requeue beyond replace, per rank moved.
#pragma once

namespace tessera::measured {

inline constexpr double kDetectSeconds = 11.6227;
inline constexpr double kRestartSeconds = 0.184333;
inline constexpr double kColdStartSeconds = 0;
inline constexpr double kColdStartPerNodeSeconds = 0;
inline constexpr const char* kSource = "1000 emulated nodes of simulated 8xH100, gang of 16 sleep workers, heartbeat timeout 10 s, 2 CPUs, 3 round(s) per policy";

}  // namespace tessera::measured
