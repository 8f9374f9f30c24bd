// Affinity between the roles of an RLJob (TaskGroup::affinity): the tasks of two roles lie
// inside one domain of a named topology level (or on one node). An RLJob is one gang, placed
// all or nothing; the gang placer lays its roles out in rank order, domain by domain, so roles
// next to each other usually land close. When that placement breaks an affinity, the gang is
// placed again with every task inside one domain of the tightest affinity level (which honours
// every affinity at once), and waits when that does not fit. See docs/rl-jobs.md.
#pragma once

#include <optional>
#include <string>

#include "core/cluster.h"
#include "core/placement.h"
#include "core/workload.h"

namespace tessera {

bool HasRoleAffinity(const Workload& job);

// True when every affinity of `job` holds in `placement` (rank order, groups in order).
bool RoleAffinityHolds(const Cluster& cluster, const Workload& job, const Placement& placement);

// The level name, of those the job's affinities name, that is tightest in `cluster`; empty when
// the job has none or names a level the cluster lacks.
std::string TightestAffinityLevel(const Cluster& cluster, const Workload& job);

// Why an affinity of `job` can never hold on `cluster`: a role the job does not have, a level
// the cluster does not have, or two roles too big for any one domain of the level.
std::optional<std::string> RoleAffinityNeverFitsReason(const Cluster& cluster, const Workload& job);

}  // namespace tessera
