// A job spec as submitted to the controller: the Workload the scheduler sees (core) plus how
// to launch it (argv, environment, grace period, restarts, checkpoints, processes per worker).
// ParseJobSpec turns YAML or JSON text into a validated JobSpec; every problem is reported with
// the path of the field and the reason (`spec.workers: must be between 1 and 100000, got -3`).
// JobSpecToJson writes the canonical form, which parses back to the same JobSpec.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/recovery_mode.h"
#include "core/status.h"
#include "core/workload.h"

namespace tessera {

// Limits on what a spec may ask for. Anything beyond is refused as absurd.
inline constexpr std::size_t kMaxSpecBytes = 1 << 20;
inline constexpr std::size_t kMaxNameLength = 63;
inline constexpr std::size_t kMaxQueueLength = 253;
inline constexpr int kMaxQueueDepth = 8;
inline constexpr int kMaxTasksPerJob = 100'000;
inline constexpr int kMaxGpusPerTask = 16;  // = kMaxGpusPerNode: a task lives on one node
inline constexpr int kMaxProcessesPerWorker = 64;
inline constexpr int kMaxPriority = 1'000'000;
inline constexpr int kMaxGracePeriodSeconds = 24 * 3600;
inline constexpr int kMaxRestartsLimit = 10'000;
inline constexpr std::size_t kMaxArgs = 1024;
inline constexpr std::size_t kMaxArgBytes = 32 * 1024;
inline constexpr std::size_t kMaxEnvEntries = 1024;
inline constexpr std::size_t kMaxRoles = 16;
inline constexpr int kMaxBlockTokens = 4096;
inline constexpr int kMaxTimeLimitSeconds = 366 * 24 * 3600;
inline constexpr std::size_t kMaxDependencies = 64;

// `spec.dependencies[].type`: when a job may start, as Slurm's --dependency types of the same
// name. afterok: once the other job has Succeeded (if it ends any other way, this job fails
// with reason DependencyNeverSatisfied); afterany: once the other job has ended, however.
enum class DependencyType { kAfterOk, kAfterAny };
std::string_view DependencyTypeName(DependencyType type);

// One job this job waits for, by queue and name (the queue defaults to the job's own).
struct JobDependency {
  DependencyType type = DependencyType::kAfterOk;
  std::string queue;
  std::string name;
  friend bool operator==(const JobDependency&, const JobDependency&) = default;
};

// `spec.successPolicy` of a TrainingJob: when the gang is done. AllWorkers: when every task
// exited 0; Rank0: when rank 0 exits (with its exit status), the other tasks are then stopped
// (a Kubeflow PyTorchJob's Master, an sbatch script that runs on the first node).
enum class SuccessPolicy { kAllWorkers, kRank0 };

// One group of identical tasks and how each of them is launched.
struct RoleSpec {
  std::string name;                    // worker | replica | task | session | an RLJob role name
  int count = 1;                       // tasks in the group
  TaskShape shape;                     // what each task needs on its node
  std::vector<std::string> command;    // argv (or, with shell, a script and its arguments)
  int processes_per_worker = 1;        // processes launched per task, each with its LOCAL_RANK
  std::vector<RoleAffinity> affinity;  // RLJob: `affinity: {ROLE: LEVEL}` (docs/rl-jobs.md)
  friend bool operator==(const RoleSpec&, const RoleSpec&) = default;
};

struct JobSpec {
  WorkloadKind kind = WorkloadKind::kTraining;
  std::string name;
  std::string queue = "default";
  std::string user;  // metadata.user; informational
  int priority = 0;
  bool preemptible = true;
  std::vector<std::string> gpu_models;  // accepted models; empty = any
  // Relative speed on each of gpu_models (`gpuModels: {H100: 1.0, A100: 0.55}`); empty when
  // gpuModels is a plain list (docs/heterogeneous.md).
  std::vector<double> gpu_model_speeds;
  TopologyConstraint topology;
  int min_workers = 0, max_workers = 0;  // elastic range (TrainingJob); 0 = not elastic
  int checkpoint_interval_seconds = 0;
  std::string checkpoint_dir;
  int grace_period_seconds = 30;  // SIGTERM, then SIGKILL after this
  int max_restarts = 3;           // gang restarts after failures or lost nodes
  std::map<std::string, std::string> env;
  bool shell = false;       // run command[0] with /bin/sh -c (never implied)
  std::string working_dir;  // absolute; empty = a fresh directory per task on the agent
  // Wall-time limit of each run in seconds, 0 = none: a run still going this long after it
  // started is stopped as cancel stops it and the job fails with reason TimeLimit.
  int time_limit_seconds = 0;
  // The run time its owner expects, in seconds, 0 = not given: the estimate of the queue
  // orders that need one (srtf, srsf; backfill takes timeLimitSeconds as in Slurm).
  int expected_duration_seconds = 0;
  std::vector<JobDependency> dependencies;  // all must be met before the job is scheduled
  SuccessPolicy success_policy = SuccessPolicy::kAllWorkers;  // TrainingJob
  // TrainingJob: how the gang recovers from a lost or drained node; none = the controller's.
  std::optional<RecoveryMode> recovery;
  int parallelism = 0;  // BatchJob: at most this many tasks run at once; 0 = no cap
  // InferenceService.
  int replicas_min = 0, replicas_max = 0;
  int slo_latency_ms = 0;  // slo.ttftMs (an older slo.latencyMs is read as this); 0 = none
  int slo_tbt_ms = 0;      // slo.tbtMs: the gap between streamed tokens; 0 = none
  double slo_percentile = 0;
  // routing: {policy, blockTokens}: the gateway's routing policy by name (src/serve/) and the
  // prompt block size its KV block index hashes (the engines' KV block size).
  std::string routing_policy;  // empty = the gateway's default
  int routing_block_tokens = 16;
  // The task groups, in gang (rank) order. TrainingJob: one "worker" group; InferenceService:
  // "replica" (min replicas); BatchJob: "task"; DevSession: "session"; RLJob: its roles.
  std::vector<RoleSpec> roles;

  // Tasks in the gang.
  int TaskCount() const;
  // True when each task is scheduled on its own (BatchJob): no all-or-nothing start.
  bool IndependentTasks() const { return kind == WorkloadKind::kBatch; }
  // The scheduler's view. `id` and `submit` are filled in by the caller.
  Workload ToWorkload() const;
  // The role and the rank within the role of gang rank `rank`.
  std::pair<const RoleSpec*, int> RoleOfRank(int rank) const;

  friend bool operator==(const JobSpec& a, const JobSpec& b);
};

// One problem with a spec: the field path ("spec.workers", "metadata.name") and the reason.
struct FieldError {
  std::string field;
  std::string reason;
  std::string ToString() const { return field.empty() ? reason : field + ": " + reason; }
};

// Parses and validates a spec (YAML or JSON). On failure the Error's message lists every
// problem found, one per "; ", first one first; `errors`, when given, receives them as values.
Result<JobSpec> ParseJobSpec(std::string_view text, std::vector<FieldError>* errors = nullptr);
// The same from a JSON tree (e.g. the canonical form read back from the store).
Result<JobSpec> JobSpecFromJson(const nlohmann::json& doc,
                                std::vector<FieldError>* errors = nullptr);

// `tessera submit`'s rule, as sbatch runs a job where it was submitted: a relative
// spec.workingDir of the document `text` is taken against `base_dir` (absolute). Returns the
// document as JSON when it changed it, `text` unchanged otherwise (also when it does not parse:
// that is ParseJobSpec's to report). The controller itself accepts only absolute paths.
std::string WithAbsoluteWorkingDir(const std::string& text, const std::string& base_dir);

// The canonical JSON form: apiVersion, kind, metadata and every spec field with its value.
nlohmann::json JobSpecToJson(const JobSpec& spec);

// "nlp/sft/llama-8b-sft"-style display name.
std::string QualifiedName(const std::string& queue, const std::string& name);

// True when `name` is a valid job name: [a-z0-9-], 1..63, starting and ending alphanumeric.
bool ValidJobName(std::string_view name);
// True when `queue` is a valid queue path: names as above joined by '/'.
bool ValidQueuePath(std::string_view queue);

// Environment variables Tessera sets on every task process; a spec may not set them.
const std::vector<std::string>& ReservedEnvNames();

// GPU memory of a known model in MiB (H100 80 GiB, ...), or 0 when unknown.
std::int64_t KnownGpuMemoryMib(std::string_view model);

}  // namespace tessera
