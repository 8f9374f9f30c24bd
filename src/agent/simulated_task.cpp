#include "agent/simulated_task.h"

#include <charconv>
#include <cmath>

namespace tessera {

std::optional<Tick> SimulatedRunMs(const TaskLaunch& launch) {
  const auto& argv = launch.command;
  if (launch.shell || argv.size() != 2 || argv[0] != "sleep") return std::nullopt;
  const std::string& arg = argv[1];
  double seconds = 0;
  const auto [end, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), seconds);
  if (ec != std::errc() || end != arg.data() + arg.size() || !std::isfinite(seconds) ||
      seconds < 0 || seconds > 1e9) {
    return std::nullopt;
  }
  return static_cast<Tick>(std::llround(seconds * 1000));
}

}  // namespace tessera
