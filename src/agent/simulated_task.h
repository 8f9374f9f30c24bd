// Simulated tasks (tessera-agent --simulate-tasks): at thousands of emulated nodes a process per
// task would measure the machine's fork/exec, not the control plane, so a simulated task runs no
// process. It holds its GPUs for what its command states, `sleep SECONDS` (what the process
// would have done), then exits 0; any other command runs until the controller stops it. A stop
// ends it at once, as SIGTERM ends `sleep`. Every output names these tasks simulated.
#pragma once

#include <optional>

#include "core/time.h"
#include "spec/protocol.h"

namespace tessera {

// How long a simulated task of `launch` runs by itself, in ms: the SECONDS of an argv
// `sleep SECONDS` (a non-negative number); nullopt for any other command (until stopped).
std::optional<Tick> SimulatedRunMs(const TaskLaunch& launch);

}  // namespace tessera
