#include "server/submit_fit.h"

#include <algorithm>
#include <string>

#include "sched/placement/task_placer.h"

namespace tessera {

namespace {

// The spec fields that set a role's task count and GPUs per task, for messages.
struct RoleFields {
  std::string count;
  std::string gpus;
};

RoleFields FieldsOf(const JobSpec& spec, std::size_t role) {
  switch (spec.kind) {
    case WorkloadKind::kTraining:
      return {"spec.workers", "spec.gpusPerWorker"};
    case WorkloadKind::kInference:
      return {"spec.replicas", "spec.gpusPerReplica"};
    case WorkloadKind::kBatch:
      return {"spec.tasks", "spec.gpusPerTask"};
    case WorkloadKind::kDevSession:
      return {"spec", "spec.gpus"};
    case WorkloadKind::kRL: {
      const std::string r = "spec.roles[" + std::to_string(role) + "]";
      return {r + ".workers", r + ".gpusPerWorker"};
    }
  }
  return {"spec", "spec"};
}

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// " (of the accepted models H100, H200)" when the job names models.
std::string OfModels(const JobSpec& spec) {
  return spec.gpu_models.empty() ? "" : " (of the accepted models " + Join(spec.gpu_models) + ")";
}

std::optional<FieldError> ModelsMissing(const Cluster& cluster, const JobSpec& spec) {
  if (spec.gpu_models.empty()) return std::nullopt;
  for (const auto& m : spec.gpu_models) {
    if (cluster.models().Find(m)) return std::nullopt;
  }
  std::vector<std::string> have;
  for (int i = 0; i < cluster.models().size(); ++i)
    have.push_back(cluster.models().Name(static_cast<GpuModelId>(i)));
  return FieldError{"spec.gpuModels", "no registered node has " + Join(spec.gpu_models) +
                                          " (the cluster has " + Join(have) + ")"};
}

}  // namespace

std::optional<FieldError> NeverFitsAtSubmit(const Cluster& cluster, const JobSpec& spec) {
  if (cluster.node_count() == 0) return std::nullopt;
  Workload w = spec.ToWorkload();
  ResolveGpuModels(cluster.models(), w);
  const bool needs_gpus = w.TotalGpuMilli() > 0;
  if (needs_gpus) {
    if (auto missing = ModelsMissing(cluster, spec)) return missing;
  }
  int largest = 0;         // GPUs of the largest node of an accepted model
  std::int64_t total = 0;  // GPUs on nodes of an accepted model
  for (const auto& n : cluster.nodes()) {
    if (!w.allowed_models.Contains(n.gpu_model)) continue;
    largest = std::max(largest, n.gpu_count);
    total += n.gpu_count;
  }
  std::int64_t gang_milli = 0;
  for (std::size_t i = 0; i < spec.roles.size(); ++i) {
    const RoleSpec& role = spec.roles[i];
    const RoleFields fields = FieldsOf(spec, i);
    if (role.shape.gpus > largest) {
      return FieldError{fields.gpus, std::to_string(role.shape.gpus) + " GPUs per " + role.name +
                                         ", and the largest registered node has " +
                                         std::to_string(largest) + OfModels(spec)};
    }
    // An elastic gang starts at its minimum when its nominal size does not fit.
    const int count = spec.min_workers > 0 ? spec.min_workers : role.count;
    gang_milli += std::int64_t{count} * role.shape.Total().gpu_milli;
    // Whole GPUs of one role: each node holds floor(its GPUs / GPUs per task) of its tasks.
    if (spec.IndependentTasks() || role.shape.gpus == 0 || role.shape.IsShare()) continue;
    std::int64_t slots = 0;
    for (const auto& n : cluster.nodes()) {
      if (w.allowed_models.Contains(n.gpu_model)) slots += n.gpu_count / role.shape.gpus;
    }
    if (slots < count) {
      return FieldError{fields.count, std::to_string(count) + " " + role.name + "s of " +
                                          std::to_string(role.shape.gpus) +
                                          " GPUs must run at once, and the " +
                                          std::to_string(cluster.node_count()) +
                                          " registered nodes hold at most " +
                                          std::to_string(slots) + " such tasks" + OfModels(spec)};
    }
  }
  if (!spec.IndependentTasks() && gang_milli > total * kMilliPerGpu) {
    return FieldError{"spec", "the job needs " + std::to_string(gang_milli / kMilliPerGpu) +
                                  " GPUs at once, and the registered cluster has " +
                                  std::to_string(total) + OfModels(spec)};
  }
  // What is left (CPU, memory, topology, affinity) as the scheduler judges it; a BatchJob's
  // tasks are placed one at a time.
  if (spec.IndependentTasks()) {
    for (auto& g : w.groups) g.count = 1;
  }
  if (auto why = NeverFitsReason(cluster, w)) return FieldError{"spec", *why};
  return std::nullopt;
}

std::shared_ptr<const Cluster> SubmitFitCluster::Get(std::uint64_t generation,
                                                     const std::function<void(Cluster&)>& build) {
  std::lock_guard lock(mu_);
  if (!cluster_ || generation != generation_) {
    auto fresh = std::make_shared<Cluster>();
    build(*fresh);
    cluster_ = std::move(fresh);
    generation_ = generation;
  }
  return cluster_;
}

}  // namespace tessera
