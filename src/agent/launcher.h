// Launching a task's processes: argv straight to execvp (a shell only when the spec asks with
// `shell: true`), each task in its own session or process group (and cgroup v2 where the machine
// allows), stdout and stderr appended to one log file under the agent's state directory, the
// environment torchrun, Megatron-LM and DeepSpeed expect, and CUDA_VISIBLE_DEVICES set to the
// task's GPUs. With --run-as, processes drop to that user before exec and never run as root.
//
// Tasks that run as the agent's user outside a cgroup start with posix_spawn (no copy of the
// agent's page tables); with --run-as or cgroups, fork: everything that allocates happens
// before it and the child only makes system calls.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "agent/task_isolation.h"
#include "core/status.h"
#include "core/time.h"
#include "spec/protocol.h"

namespace tessera {

struct RunAsUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  std::string home;
};

// Looks up `user`; refuses root (uid 0) and, when the agent is not root, any other user.
Result<RunAsUser> ResolveRunAs(const std::string& user);

// An optional cgroup v2 subtree for tasks: /sys/fs/cgroup/<agent's cgroup>/tessera-<node>.
class TaskCgroups {
 public:
  // Sets up the subtree when the unified hierarchy is mounted and writable; otherwise returns
  // a disabled instance and says why in `reason()`.
  static TaskCgroups Detect(const std::string& node);
  bool enabled() const { return !root_.empty(); }
  const std::string& reason() const { return reason_; }
  // The directory of task `id` (created), or empty when disabled or on failure.
  std::string Create(std::int64_t id) const;
  // Writes `t`'s cpu.weight and memory.max into its directory `dir` (agent/task_isolation.h)
  // where the controllers are enabled; returns what was applied and what was not, and why.
  std::string Limit(const std::string& dir, const TaskLaunch& t) const;
  // SIGKILLs every process in the task's cgroup (cgroup.kill), then removes it when empty.
  void Kill(const std::string& dir) const;
  void Remove(const std::string& dir) const;

 private:
  // True for a task directory directly below this subtree (records read back from disk are
  // never trusted to name another path).
  bool Owns(const std::string& dir) const;

  std::string root_;
  std::string reason_;
  bool cpu_ = false, memory_ = false;  // controllers enabled for the task directories
};

struct LaunchSettings {
  std::string state_dir;  // absolute, canonical; logs and work directories live below it
  std::string node;
  bool simulated_gpus = false;
  std::optional<RunAsUser> run_as;
  const TaskCgroups* cgroups = nullptr;
  std::string no_cgroups;           // why cgroups is null, for the task's isolation line
  const MpsSupport* mps = nullptr;  // null: not looked for
  std::int64_t gpu_memory_mib = 0;  // of each of the node's GPUs
};

struct LaunchedTask {
  pid_t pgid = 0;
  std::vector<pid_t> pids;  // one per process of the task (processesPerWorker)
  Tick started_ms = 0;
  std::string log_path;
  std::string cgroup;     // empty when not in a cgroup
  std::string isolation;  // what of agent/task_isolation.h was applied, and what not and why
};

// The argv of the task's processes: `command`, or /bin/sh -c command[0] with the rest as $1...
std::vector<std::string> TaskArgv(const TaskLaunch& t);
// The full environment of process `local_rank` of `t`, on top of `inherited` (NAME=VALUE).
std::vector<std::string> TaskEnvironment(const TaskLaunch& t, int local_rank,
                                         const LaunchSettings& s,
                                         const std::vector<std::string>& inherited);
// <state>/logs/task-<id>.log; only ever built from the numeric task id.
std::string TaskLogPath(const std::string& state_dir, std::int64_t task_id);

// Starts every process of `t`. On failure nothing is left running and the error says which
// step failed ("exec python3: No such file or directory").
Result<LaunchedTask> LaunchTask(const TaskLaunch& t, const LaunchSettings& s);

Tick NowMs();

}  // namespace tessera
