#include "sched/colocation/oversell.h"

#include <algorithm>

namespace tessera {

std::int64_t OversellCredit(std::int32_t oversell_permille, std::int64_t requested,
                            std::int64_t used) {
  const std::int64_t headroom = std::max<std::int64_t>(0, requested - used);
  return std::int64_t{oversell_permille} * headroom / 1000;
}

Placement ChargedPlacement(const Placement& p, bool oversold) {
  if (!oversold) return p;
  Placement charged = p;
  for (auto& t : charged) {
    t.gpu_mask = 0;
    t.gpu_milli = 0;
  }
  return charged;
}

}  // namespace tessera
