// The check at submit that a job can ever run on the registered cluster, as Slurm's sbatch
// refuses a job with "Requested node configuration is not available": a task that needs more
// GPUs than any node (of the accepted models) has, a gang that needs more GPUs at once than
// the cluster has, GPU models no node has, or anything else no empty node could hold
// (NeverFitsReason: CPU, memory, topology levels, role affinities). A refused job is not
// stored; `tessera submit --queue-anyway` (POST /v1/jobs?queueAnyway=true) skips the check,
// e.g. for a job that waits for bigger nodes to register. With no node registered yet nothing
// is refused: there is no cluster to judge by.
//
// Pure: no clocks or I/O. SubmitFitCluster caches the cluster between node changes and is
// thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "core/cluster.h"
#include "spec/job_spec.h"

namespace tessera {

// Why `spec` can never run on `cluster` (the registered nodes, empty), as the field to blame
// and the reason; nullopt when it could, or when the cluster has no node.
std::optional<FieldError> NeverFitsAtSubmit(const Cluster& cluster, const JobSpec& spec);

// The registered nodes as a Cluster, rebuilt only when the controller's node generation
// (bumped when a node is added or changes shape) moves.
class SubmitFitCluster {
 public:
  // The cluster of `generation`; `build` fills a fresh Cluster when the generation changed.
  std::shared_ptr<const Cluster> Get(std::uint64_t generation,
                                     const std::function<void(Cluster&)>& build);

 private:
  std::mutex mu_;
  std::uint64_t generation_ = 0;
  std::shared_ptr<const Cluster> cluster_;
};

}  // namespace tessera
