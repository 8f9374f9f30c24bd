// A workload as the scheduler sees it: a gang of task groups (one group for a TrainingJob's
// workers, several for an RLJob's roles), what each task needs, and the facts the policies
// may use (priority, queue, submit time, and for oracle policies and the simulator, the run
// time). Built from job specs by the API and from traces by the simulator's readers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/gpu_model.h"
#include "core/ids.h"
#include "core/resources.h"
#include "core/time.h"

namespace tessera {

enum class WorkloadKind { kTraining, kInference, kBatch, kDevSession, kRL };

std::string_view KindName(WorkloadKind k);  // "TrainingJob", ...
bool ParseKind(std::string_view name, WorkloadKind* out);

// What one task (one worker, replica or batch task) needs on one node.
struct TaskShape {
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;
  int gpus = 0;                // number of GPUs the task touches
  std::int32_t gpu_milli = 0;  // per GPU: 1000 for whole GPUs, 1..999 for a share of one GPU

  bool IsShare() const { return gpus == 1 && gpu_milli < kMilliPerGpu; }
  Resources Total() const {
    return Resources{cpu_milli, memory_mib, gpus * std::int64_t{gpu_milli}};
  }
  friend bool operator==(const TaskShape&, const TaskShape&) = default;
};

// RLJob: the tasks of a role and of `role` together lie inside one domain of topology level
// `level` (e.g. rollout with trainer in one leaf, reference with trainer on one node).
struct RoleAffinity {
  std::string role;
  std::string level;
  friend bool operator==(const RoleAffinity&, const RoleAffinity&) = default;
};

struct TaskGroup {
  std::string name = "worker";  // worker | replica | task | trainer | rollout | ...
  int count = 1;
  TaskShape shape;
  std::vector<RoleAffinity> affinity;  // see sched/placement/role_affinity.h
};

struct TopologyConstraint {
  std::string require;  // level name all tasks must share a domain of; empty = none
  std::string prefer;   // level name preferred; empty = none
};

struct Workload {
  JobId id;
  std::string name;
  WorkloadKind kind = WorkloadKind::kTraining;
  std::string queue = "default";
  std::string user;
  int priority = 0;
  bool preemptible = true;

  std::vector<TaskGroup> groups;        // the gang: every task of every group starts together
  std::vector<std::string> gpu_models;  // accepted models; empty = any
  GpuModelSet allowed_models = GpuModelSet::Any();  // gpu_models resolved against a cluster
  // Relative speed on each of gpu_models, in the same order (1.0 = the speed `duration` is
  // measured at); empty = the same speed on every model. Resolved against a cluster into
  // model_speed, indexed by GpuModelId (empty = 1.0 everywhere). See docs/heterogeneous.md.
  std::vector<double> gpu_model_speeds;
  std::vector<double> model_speed;
  TopologyConstraint topology;

  Tick submit = 0;    // when it entered the system
  Tick duration = 0;  // run time at full size when known (traces, estimates); 0 = unknown
  Tick checkpoint_interval = 0;  // 0 = never checkpoints
  int min_workers = 0;           // elastic range; 0 = not elastic
  int max_workers = 0;

  int TaskCount() const;
  double SpeedOn(GpuModelId model) const {
    return model < model_speed.size() ? model_speed[model] : 1.0;
  }
  std::int64_t TotalGpuMilli() const;
  Resources TotalResources() const;
  // The shape of task `rank` in gang order (groups in order, ranks within a group).
  const TaskShape& ShapeOfTask(int rank) const;
};

// When a run that began at `started` last saved a checkpoint by `now`, for a job that saves
// every `interval` (> 0) of its run: the last whole interval. The simulator and the live
// controller both estimate it so, for checkpoint-aware preemption.
inline Tick LastCheckpointAt(Tick started, Tick now, Tick interval) {
  return now <= started ? started : started + (now - started) / interval * interval;
}

// Sets w.allowed_models and w.model_speed from w.gpu_models and w.gpu_model_speeds against the
// models of one cluster (names the cluster lacks are ignored: no node has them).
void ResolveGpuModels(const GpuModelCatalog& catalog, Workload& w);

}  // namespace tessera
