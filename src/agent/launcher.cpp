#include "agent/launcher.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "agent/task_usage.h"
#include "spec/gpu_usage_file.h"
#include "spec/job_spec.h"

extern char** environ;

namespace tessera {

namespace {

// What the child reports through the close-on-exec pipe when a step before exec fails.
struct ChildFailure {
  int step;
  int err;
};
constexpr const char* kSteps[] = {
    "setsid/setpgid", "open /dev/null",          "dup2", "chdir", "cgroup", "setgroups", "setgid",
    "setuid",         "still root after setuid", "exec"};

std::string Join(const std::vector<int>& v, char sep) {
  std::string s;
  for (int x : v) {
    if (!s.empty()) s += sep;
    s += std::to_string(x);
  }
  return s;
}

bool WriteSmallFile(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// The file execvp would run for `name` under the task's own PATH (execvp in the child searched
// the task's environment, not the agent's); `name` itself when it has a slash. Empty when no
// executable file is found.
std::string ResolveExecutable(const std::string& name, const std::vector<std::string>& env) {
  if (name.find('/') != std::string::npos) return name;
  std::string path = "/usr/local/bin:/usr/bin:/bin";  // glibc's default when PATH is unset
  for (const auto& kv : env) {
    if (kv.rfind("PATH=", 0) == 0) path = kv.substr(5);
  }
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    const std::string dir = end == start ? "." : path.substr(start, end - start);
    const std::string candidate = dir + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    start = end + 1;
  }
  return "";
}

// posix_spawn (clone with CLONE_VM|CLONE_VFORK in glibc): the agent's page tables are not
// copied, which fork did once per task. It covers what a task needs when it runs as the agent's
// user outside a cgroup: session or process group, signal mask and dispositions, stdin from
// /dev/null, stdout and stderr to the log, no other descriptor, working directory, environment.
// Returns 0 or the errno of the step that failed; `step` says which (kSteps).
int SpawnProcess(const std::string& file, char* const argv[], char* const envp[], int log_fd,
                 const std::string& work_dir, bool own_session, pid_t group, pid_t* pid,
                 int* step) {
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t fa;
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_init(&fa);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD}) sigaddset(&defaults, sig);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  flags |= own_session ? POSIX_SPAWN_SETSID : POSIX_SPAWN_SETPGROUP;
  posix_spawnattr_setflags(&attr, flags);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  if (!own_session) posix_spawnattr_setpgroup(&attr, group);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, log_fd, 1);
  posix_spawn_file_actions_adddup2(&fa, log_fd, 2);
  // No descriptor of the agent (sockets, other tasks' logs) leaks into the task.
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  posix_spawn_file_actions_addchdir_np(&fa, work_dir.c_str());
  const int rc = ::posix_spawn(pid, file.c_str(), &fa, &attr, argv, envp);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    // glibc reports the errno of whichever action failed; the working directory is the only
    // one a spec controls, so name it when it is the culprit.
    struct stat st {};
    *step = ::stat(work_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ? 3 : 9;
  }
  return rc;
}

}  // namespace

Tick NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Result<RunAsUser> ResolveRunAs(const std::string& user) {
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (getpwnam_r(user.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr) {
    return InvalidArgument("--run-as: no such user \"" + user + "\"");
  }
  if (pw.pw_uid == 0) {
    return InvalidArgument("--run-as " + user + ": refusing to run tasks as root (uid 0)");
  }
  if (::geteuid() != 0 && ::geteuid() != pw.pw_uid) {
    return FailedPrecondition("--run-as " + user +
                              ": the agent must run as root to switch to "
                              "another user");
  }
  RunAsUser r;
  r.name = user;
  r.uid = pw.pw_uid;
  r.gid = pw.pw_gid;
  r.home = pw.pw_dir ? pw.pw_dir : "/";
  int n = 64;
  std::vector<gid_t> groups(static_cast<std::size_t>(n));
  if (getgrouplist(user.c_str(), pw.pw_gid, groups.data(), &n) < 0) {
    groups.resize(static_cast<std::size_t>(n));
    getgrouplist(user.c_str(), pw.pw_gid, groups.data(), &n);
  }
  groups.resize(static_cast<std::size_t>(std::max(n, 0)));
  r.groups = groups;
  return r;
}

TaskCgroups TaskCgroups::Detect(const std::string& node) {
  TaskCgroups c;
  if (!std::filesystem::exists("/sys/fs/cgroup/cgroup.controllers")) {
    c.reason_ = "no cgroup v2 unified hierarchy at /sys/fs/cgroup";
    return c;
  }
  std::ifstream self("/proc/self/cgroup");
  std::string line, own;
  while (std::getline(self, line)) {
    if (line.rfind("0::", 0) == 0) own = line.substr(3);
  }
  const std::string base = "/sys/fs/cgroup" + (own == "/" ? std::string() : own);
  const std::string root = base + "/tessera-" + node;
  std::error_code ec;
  std::filesystem::create_directories(root, ec);
  if (ec || ::access(root.c_str(), W_OK) != 0) {
    c.reason_ = "cannot create " + root + (ec ? ": " + ec.message() : "");
    return c;
  }
  c.root_ = root;
  // Task directories get the cpu and memory controllers where the parent hands them down (the
  // agent's own cgroup must have them in its subtree_control: a delegated systemd unit does).
  std::ifstream available(root + "/cgroup.controllers");
  std::string controller;
  while (available >> controller) {
    if (controller != "cpu" && controller != "memory") continue;
    if (!WriteSmallFile(root + "/cgroup.subtree_control", "+" + controller)) continue;
    (controller == "cpu" ? c.cpu_ : c.memory_) = true;
  }
  return c;
}

std::string TaskCgroups::Limit(const std::string& dir, const TaskLaunch& t) const {
  if (!enabled()) return "cgroup v2: not possible: " + reason_;
  if (dir.empty()) return "cgroup v2: not possible: could not create the task's cgroup";
  std::string s = "cgroup v2: ";
  const int weight = CpuWeightFor(t.cpu_milli, t.oversold);
  if (!cpu_) {
    s += "cpu.weight not possible (no cpu controller delegated to " + root_ + ")";
  } else if (WriteSmallFile(dir + "/cpu.weight", std::to_string(weight))) {
    s += "cpu.weight " + std::to_string(weight) + (t.oversold ? " (oversold)" : "");
  } else {
    s += "cpu.weight not possible (write failed)";
  }
  s += ", ";
  if (t.memory_mib <= 0) {
    s += "memory.max not set (no memory request)";
  } else if (!memory_) {
    s += "memory.max not possible (no memory controller delegated to " + root_ + ")";
  } else if (WriteSmallFile(dir + "/memory.max", std::to_string(t.memory_mib * 1048576))) {
    s += "memory.max " + std::to_string(t.memory_mib) + " MiB";
  } else {
    s += "memory.max not possible (write failed)";
  }
  return s;
}

std::string TaskCgroups::Create(std::int64_t id) const {
  if (!enabled()) return "";
  const std::string dir = root_ + "/task-" + std::to_string(id);
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return "";
  return dir;
}

void TaskCgroups::Kill(const std::string& dir) const {
  if (!Owns(dir)) return;
  if (!WriteSmallFile(dir + "/cgroup.kill", "1")) {
    std::ifstream procs(dir + "/cgroup.procs");
    pid_t pid = 0;
    while (procs >> pid) ::kill(pid, SIGKILL);
  }
}

void TaskCgroups::Remove(const std::string& dir) const {
  if (Owns(dir)) ::rmdir(dir.c_str());
}

bool TaskCgroups::Owns(const std::string& dir) const {
  const std::string prefix = root_ + "/task-";
  return enabled() && dir.size() > prefix.size() && dir.compare(0, prefix.size(), prefix) == 0 &&
         dir.find('/', prefix.size()) == std::string::npos && dir.find("..") == std::string::npos;
}

std::vector<std::string> TaskArgv(const TaskLaunch& t) {
  if (!t.shell) return t.command;
  std::vector<std::string> argv = {"/bin/sh", "-c", t.command.empty() ? "" : t.command[0],
                                   "tessera-task"};
  for (std::size_t i = 1; i < t.command.size(); ++i) argv.push_back(t.command[i]);
  return argv;
}

std::vector<std::string> TaskEnvironment(const TaskLaunch& t, int local_rank,
                                         const LaunchSettings& s,
                                         const std::vector<std::string>& inherited) {
  std::map<std::string, std::string> env;
  for (const auto& kv : inherited) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (s.run_as) {
    env["HOME"] = s.run_as->home;
    env["USER"] = s.run_as->name;
    env["LOGNAME"] = s.run_as->name;
  }
  for (const auto& [k, v] : t.env) env[k] = v;
  const int ppw = std::max(1, t.processes);
  const int rank = t.process_rank_base + local_rank;
  auto set = [&](const char* k, const std::string& v) { env[k] = v; };
  set("CUDA_VISIBLE_DEVICES", Join(t.gpus, ','));
  set("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
  if (t.gpu_milli > 0 && t.gpu_milli < 1000 && !t.gpus.empty()) {
    set("TESSERA_GPU_SHARE_MILLI", std::to_string(t.gpu_milli));
  }
  if (s.mps != nullptr) {
    for (const auto& [k, v] : MpsEnvironment(t, *s.mps, s.gpu_memory_mib)) env[k] = v;
  }
  set("MASTER_ADDR", t.master_addr);
  set("MASTER_PORT", std::to_string(t.master_port));
  set("WORLD_SIZE", std::to_string(t.world_size));
  set("RANK", std::to_string(rank));
  set("LOCAL_RANK", std::to_string(local_rank));
  set("LOCAL_WORLD_SIZE", std::to_string(ppw));
  set("NODE_RANK", std::to_string(t.rank));
  set("GROUP_RANK", std::to_string(t.rank));
  set("ROLE_NAME", t.role);
  set("ROLE_RANK", std::to_string(t.role_rank * ppw + local_rank));
  set("ROLE_WORLD_SIZE", std::to_string(t.role_size * ppw));
  // torchrun reads its rendezvous settings from PET_* when not given as flags.
  auto set_default = [&](const char* k, const std::string& v) { env.try_emplace(k, v); };
  set_default("PET_NNODES", std::to_string(t.task_count));
  set_default("PET_NODE_RANK", std::to_string(t.rank));
  set_default("PET_MASTER_ADDR", t.master_addr);
  set_default("PET_MASTER_PORT", std::to_string(t.master_port));
  if (t.kind == "BatchJob") {
    set("TASK_INDEX", std::to_string(t.rank));
    set("TASK_COUNT", std::to_string(t.task_count));
  }
  if (t.kind == "InferenceService") {
    set("REPLICA_INDEX", std::to_string(t.rank));
    const std::string port = std::to_string(InferenceReplicaPort(t.master_port, t.rank));
    set("TESSERA_PORT", port);
    set_default("PORT", port);
  }
  set("TESSERA_JOB", t.job);
  set("TESSERA_QUEUE", t.queue);
  set("TESSERA_TASK_ID", std::to_string(t.task_id));
  set("TESSERA_ATTEMPT", std::to_string(t.attempt));
  set("TESSERA_NODE", s.node);
  // The file the task may write its GPU use to (docs/gpu-usage.md); the agent reports it.
  set(kGpuUsageFileEnv, TaskUsagePath(s.state_dir, t.task_id));
  if (s.simulated_gpus) {
    set("TESSERA_SIMULATED_GPUS", "1");
  } else {
    env.erase("TESSERA_SIMULATED_GPUS");
  }
  if (!t.checkpoint_dir.empty()) set("TESSERA_CHECKPOINT_DIR", t.checkpoint_dir);
  if (t.checkpoint_interval_seconds > 0) {
    set("TESSERA_CHECKPOINT_INTERVAL_SECONDS", std::to_string(t.checkpoint_interval_seconds));
  } else {
    env.erase("TESSERA_CHECKPOINT_INTERVAL_SECONDS");
  }
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::string TaskLogPath(const std::string& state_dir, std::int64_t task_id) {
  return state_dir + "/logs/task-" + std::to_string(task_id) + ".log";
}

Result<LaunchedTask> LaunchTask(const TaskLaunch& t, const LaunchSettings& s) {
  if (t.command.empty() || (t.shell && t.command[0].empty())) {
    return InvalidArgument("empty command");
  }
  LaunchedTask out;
  // Directories and the log file, all below the state directory and named by number only.
  std::error_code ec;
  std::filesystem::create_directories(s.state_dir + "/logs", ec);
  out.log_path = TaskLogPath(s.state_dir, t.task_id);
  std::string work_dir = t.working_dir;
  if (work_dir.empty()) {
    work_dir = s.state_dir + "/work/task-" + std::to_string(t.task_id);
    std::filesystem::create_directories(work_dir, ec);
    if (ec) return IoError("cannot create " + work_dir + ": " + ec.message());
    if (s.run_as && ::chown(work_dir.c_str(), s.run_as->uid, s.run_as->gid) != 0) {
      return IoError("cannot hand " + work_dir + " to " + s.run_as->name + ": " +
                     std::strerror(errno));
    }
  }
  const int log_fd =
      ::open(out.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0640);
  if (log_fd < 0) return IoError("cannot open " + out.log_path + ": " + std::strerror(errno));

  // Everything the children need, prepared before fork.
  const std::vector<std::string> argv_strings = TaskArgv(t);
  std::vector<char*> argv;
  for (const auto& a : argv_strings) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> inherited;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) inherited.emplace_back(*e);
  const int processes = std::max(1, t.processes);
  std::vector<std::vector<std::string>> env_strings;
  std::vector<std::vector<char*>> envs;
  for (int p = 0; p < processes; ++p) env_strings.push_back(TaskEnvironment(t, p, s, inherited));
  for (auto& strings : env_strings) {
    std::vector<char*> e;
    for (auto& kv : strings) e.push_back(kv.data());
    e.push_back(nullptr);
    envs.push_back(std::move(e));
  }
  out.cgroup = s.cgroups != nullptr ? s.cgroups->Create(t.task_id) : "";
  // Limits before any process joins, so none runs unlimited for a moment.
  out.isolation = s.cgroups != nullptr ? s.cgroups->Limit(out.cgroup, t)
                                       : "cgroup v2: not possible: " + s.no_cgroups;
  if (s.mps != nullptr) out.isolation += "; " + MpsSummary(t, *s.mps, s.gpu_memory_mib);
  const std::string cgroup_procs = out.cgroup.empty() ? "" : out.cgroup + "/cgroup.procs";
  const bool drop = s.run_as.has_value();
  const uid_t uid = drop ? s.run_as->uid : 0;
  const gid_t gid = drop ? s.run_as->gid : 0;
  const std::vector<gid_t> groups = drop ? s.run_as->groups : std::vector<gid_t>{};

  auto kill_all = [&] {
    if (out.pgid > 0) ::kill(-out.pgid, SIGKILL);
    for (pid_t pid : out.pids) ::waitpid(pid, nullptr, 0);
    if (s.cgroups != nullptr) {
      s.cgroups->Kill(out.cgroup);
      s.cgroups->Remove(out.cgroup);
    }
  };

  const bool own_session = processes == 1;
  out.started_ms = NowMs();
  if (cgroup_procs.empty() && !drop) {
    for (int p = 0; p < processes; ++p) {
      const auto& env = env_strings[static_cast<std::size_t>(p)];
      const std::string file = ResolveExecutable(argv_strings[0], env);
      pid_t pid = 0;
      int step = 9, err = ENOENT;
      if (!file.empty()) {
        err = SpawnProcess(file, argv.data(), envs[static_cast<std::size_t>(p)].data(), log_fd,
                           work_dir, own_session, out.pgid, &pid, &step);
      }
      if (file.empty() || err != 0) {
        kill_all();
        ::close(log_fd);
        std::string what = kSteps[step];
        if (step == 9) what += " " + argv_strings[0];
        if (step == 3) what += " " + work_dir;
        return FailedPrecondition(what + ": " + std::strerror(err));
      }
      if (out.pgid == 0) out.pgid = pid;
      out.pids.push_back(pid);
    }
    ::close(log_fd);
    return out;
  }
  for (int p = 0; p < processes; ++p) {
    int pipefd[2];
    if (::pipe2(pipefd, O_CLOEXEC) != 0) {
      kill_all();
      ::close(log_fd);
      return IoError(std::string("pipe: ") + std::strerror(errno));
    }
    const pid_t group = out.pgid;
    const pid_t pid = ::fork();
    if (pid < 0) {
      const int err = errno;
      ::close(pipefd[0]);
      ::close(pipefd[1]);
      kill_all();
      ::close(log_fd);
      return IoError(std::string("fork: ") + std::strerror(err));
    }
    if (pid == 0) {
      // Child: system calls only.
      auto fail = [&](int step) {
        ChildFailure f{step, errno};
        (void)!::write(pipefd[1], &f, sizeof f);
        ::_exit(127);
      };
      ::close(pipefd[0]);
      // A single process gets a session of its own, as Slurm's job steps do: a hang-up of the
      // agent's session does not reach it, and the kernel's autogroup scheduler shares the CPU
      // per task rather than lumping every task of the node into the agent's group. The
      // processes of a multi-process task share one group instead (a group cannot span
      // sessions), so that one signal reaches them all.
      if (own_session ? ::setsid() < 0 : ::setpgid(0, group) != 0) fail(0);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD}) ::signal(sig, SIG_DFL);
      if (!cgroup_procs.empty()) {
        int fd = ::open(cgroup_procs.c_str(), O_WRONLY);
        if (fd < 0 || ::write(fd, "0", 1) != 1) fail(4);
        ::close(fd);
      }
      int devnull = ::open("/dev/null", O_RDONLY);
      if (devnull < 0) fail(1);
      if (::dup2(devnull, 0) < 0 || ::dup2(log_fd, 1) < 0 || ::dup2(log_fd, 2) < 0) fail(2);
      // No descriptor of the agent (sockets, other tasks' logs) leaks into the task.
      if (pipefd[1] > 3) ::close_range(3, static_cast<unsigned>(pipefd[1]) - 1, 0);
      ::close_range(static_cast<unsigned>(pipefd[1]) + 1, ~0U, 0);
      if (::chdir(work_dir.c_str()) != 0) fail(3);
      if (drop) {
        if (::setgroups(groups.size(), groups.data()) != 0) fail(5);
        if (::setgid(gid) != 0) fail(6);
        if (::setuid(uid) != 0) fail(7);
        if (::getuid() == 0 || ::geteuid() == 0) fail(8);
      }
      environ = envs[static_cast<std::size_t>(p)].data();
      ::execvp(argv[0], argv.data());
      fail(9);
    }
    ::close(pipefd[1]);
    if (out.pgid == 0) out.pgid = pid;
    // Also from the parent: no window where the child is outside its group.
    if (!own_session) ::setpgid(pid, out.pgid);
    out.pids.push_back(pid);
    ChildFailure f{};
    ssize_t n;
    do {
      n = ::read(pipefd[0], &f, sizeof f);
    } while (n < 0 && errno == EINTR);
    ::close(pipefd[0]);
    if (n == static_cast<ssize_t>(sizeof f)) {
      kill_all();
      ::close(log_fd);
      std::string what = kSteps[std::clamp(f.step, 0, 9)];
      if (f.step == 9) what += " " + argv_strings[0];
      if (f.step == 3) what += " " + work_dir;
      return FailedPrecondition(what + ": " + std::strerror(f.err));
    }
  }
  ::close(log_fd);
  return out;
}

}  // namespace tessera
