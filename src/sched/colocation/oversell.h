// The GPU capacity offline tasks may borrow from online replicas (Borg's reclamation, EuroSys'15
// §5.5: a task's reservation minus its usage is reclaimable by lower bands). Per GPU, in milli:
//   credit = floor(oversell_permille × Σ_online max(0, requested − used) / 1000)
// and the offline tasks placed on credit ("oversold") must not exceed it. Integer arithmetic,
// so shares add back up exactly after any number of placements and releases.
#pragma once

#include <cstdint>
#include <vector>

#include "core/placement.h"

namespace tessera {

std::int64_t OversellCredit(std::int32_t oversell_permille, std::int64_t requested,
                            std::int64_t used);

// What an oversold task takes from ClusterState: its CPU and memory only. Its GPU share lives
// on the online replicas' credit, which ClusterState does not know about.
Placement ChargedPlacement(const Placement& p, bool oversold);

}  // namespace tessera
