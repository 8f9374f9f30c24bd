// The verdict a report opens with: one sentence, computed from a summary's results, saying
// which policy wins on the experiment's deciding figure and by how much against the runner-up
// (and the last). The deciding figure per experiment:
//
//   allocation   GPUs allocated at 100 % demand (higher wins; difference in points)
//   replay       mean job completion time (lower wins; difference in %)
//   failures     ETTR (higher wins; points)
//   colocation   GPU allocation among the setups within 1 point of the best SLO attainment
//   serving      goodput (higher wins; %)
//
// Oracle policies (which know the future) are bounds, not candidates: they are left out while
// any other policy has the figure. Pure; never throws on a malformed summary.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace tessera::report {

// The sentence, plain text; a sentence saying why there is none when the results lack the
// deciding figure (or the experiment has none).
std::string Verdict(const nlohmann::json& summary);

}  // namespace tessera::report
