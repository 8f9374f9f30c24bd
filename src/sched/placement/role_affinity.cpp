#include "sched/placement/role_affinity.h"

#include "sched/placement/topology_gang_placer.h"

namespace tessera {

namespace {

// The index of the group called `role`, or -1.
int GroupOf(const Workload& job, const std::string& role) {
  for (std::size_t g = 0; g < job.groups.size(); ++g) {
    if (job.groups[g].name == role) return static_cast<int>(g);
  }
  return -1;
}

}  // namespace

bool HasRoleAffinity(const Workload& job) {
  for (const auto& g : job.groups) {
    if (!g.affinity.empty()) return true;
  }
  return false;
}

bool RoleAffinityHolds(const Cluster& cluster, const Workload& job, const Placement& placement) {
  std::vector<std::size_t> first(job.groups.size() + 1, 0);  // first rank of each group
  for (std::size_t g = 0; g < job.groups.size(); ++g) {
    first[g + 1] = first[g] + static_cast<std::size_t>(job.groups[g].count);
  }
  if (placement.size() != first.back()) return false;
  for (std::size_t g = 0; g < job.groups.size(); ++g) {
    for (const auto& a : job.groups[g].affinity) {
      const int other = GroupOf(job, a.role);
      const auto level = LevelNumber(cluster.topology(), a.level);
      if (other < 0 || !level) return false;
      Placement both(placement.begin() + static_cast<long>(first[g]),
                     placement.begin() + static_cast<long>(first[g + 1]));
      const auto o = static_cast<std::size_t>(other);
      both.insert(both.end(), placement.begin() + static_cast<long>(first[o]),
                  placement.begin() + static_cast<long>(first[o + 1]));
      if (SpanLevel(cluster, both) < *level) return false;
    }
  }
  return true;
}

std::string TightestAffinityLevel(const Cluster& cluster, const Workload& job) {
  std::string best;
  int best_level = kClusterLevel - 1;
  for (const auto& g : job.groups) {
    for (const auto& a : g.affinity) {
      const auto level = LevelNumber(cluster.topology(), a.level);
      if (!level) return "";
      if (*level > best_level) {
        best_level = *level;
        best = a.level;
      }
    }
  }
  return best;
}

std::optional<std::string> RoleAffinityNeverFitsReason(const Cluster& cluster,
                                                       const Workload& job) {
  for (const auto& g : job.groups) {
    for (const auto& a : g.affinity) {
      const std::string where = "roles." + g.name + ".affinity." + a.role;
      const int other = GroupOf(job, a.role);
      if (other < 0 || a.role == g.name) {
        return where + ": the job has no other role called '" + a.role + "'";
      }
      Workload pair;
      pair.allowed_models = job.allowed_models;
      pair.groups = {g, job.groups[static_cast<std::size_t>(other)]};
      pair.topology.require = a.level;
      if (auto why = TopologyNeverFitsReason(cluster, pair)) return where + ": " + *why;
    }
  }
  return std::nullopt;
}

}  // namespace tessera
