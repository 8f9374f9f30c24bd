// The agent's pure parts: the simulated GPU inventory, GPU model names from NVML device names,
// argv (no shell unless asked) and the distributed-training environment of each process; and
// real launches: process group or session, log file under the state directory, exit code, and
// what a task inherits from the agent (signal mask and dispositions, descriptors, PATH); and
// `tessera exec` sessions (exec_session.h): stdout and stderr apart, stdin, the exit code, and
// more output than the session buffers, read through its offsets.
#include "agent/launcher.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "agent/exec_session.h"
#include "agent/gpu_inventory.h"
#include "agent/heartbeat_batches.h"
#include "agent/simulated_task.h"

namespace tessera {
namespace {

std::map<std::string, std::string> AsMap(const std::vector<std::string>& env) {
  std::map<std::string, std::string> m;
  for (const auto& kv : env) m[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
  return m;
}

TaskLaunch Worker(int rank) {
  TaskLaunch t;
  t.task_id = 42;
  t.job = "llama";
  t.queue = "nlp/sft";
  t.kind = "TrainingJob";
  t.attempt = 2;
  t.rank = rank;
  t.task_count = 2;
  t.role = "worker";
  t.role_rank = rank;
  t.role_size = 2;
  t.processes = 4;
  t.process_rank_base = rank * 4;
  t.world_size = 8;
  t.gpus = {4, 5, 6, 7};
  t.command = {"python3", "train.py", "--lr", "1e-4; rm -rf /"};
  t.env = {{"WANDB_MODE", "offline"}};
  t.master_addr = "10.0.0.1";
  t.master_port = 29500;
  return t;
}

TEST(LauncherTest, ArgvIsPassedAsIsWithoutAShell) {
  const TaskLaunch t = Worker(0);
  EXPECT_EQ(TaskArgv(t), t.command);  // the ';' is an argument, never shell syntax
  TaskLaunch shell = t;
  shell.shell = true;
  shell.command = {"echo $RANK", "a b"};
  EXPECT_EQ(TaskArgv(shell),
            (std::vector<std::string>{"/bin/sh", "-c", "echo $RANK", "tessera-task", "a b"}));
}

TEST(LauncherTest, EachProcessGetsTheTorchrunEnvironment) {
  LaunchSettings s;
  s.node = "node-3";
  s.simulated_gpus = true;
  // Process 2 of worker 1: global rank 1 * 4 + 2 = 6 of 8.
  auto env = AsMap(TaskEnvironment(Worker(1), 2, s, {"PATH=/usr/bin", "RANK=99"}));
  EXPECT_EQ(env["PATH"], "/usr/bin");
  EXPECT_EQ(env["RANK"], "6");
  EXPECT_EQ(env["WORLD_SIZE"], "8");
  EXPECT_EQ(env["LOCAL_RANK"], "2");
  EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "4");
  EXPECT_EQ(env["NODE_RANK"], "1");
  EXPECT_EQ(env["GROUP_RANK"], "1");
  EXPECT_EQ(env["ROLE_RANK"], "6");
  EXPECT_EQ(env["ROLE_WORLD_SIZE"], "8");
  EXPECT_EQ(env["MASTER_ADDR"], "10.0.0.1");
  EXPECT_EQ(env["MASTER_PORT"], "29500");
  EXPECT_EQ(env["PET_NNODES"], "2");
  EXPECT_EQ(env["PET_NODE_RANK"], "1");
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "4,5,6,7");
  EXPECT_EQ(env["CUDA_DEVICE_ORDER"], "PCI_BUS_ID");
  EXPECT_EQ(env["TESSERA_SIMULATED_GPUS"], "1");
  EXPECT_EQ(env["TESSERA_NODE"], "node-3");
  EXPECT_EQ(env["TESSERA_ATTEMPT"], "2");
  // Where the task may report its GPU use (docs/gpu-usage.md).
  EXPECT_EQ(env["TESSERA_GPU_USAGE_FILE"], "/usage/task-" + env["TESSERA_TASK_ID"] + ".json");
  EXPECT_EQ(env["WANDB_MODE"], "offline");
  EXPECT_FALSE(env.contains("TASK_INDEX"));

  TaskLaunch batch = Worker(5);
  batch.kind = "BatchJob";
  batch.processes = 1;
  batch.gpus = {3};
  batch.gpu_milli = 500;
  auto benv = AsMap(TaskEnvironment(batch, 0, s, {}));
  EXPECT_EQ(benv["TASK_INDEX"], "5");
  EXPECT_EQ(benv["CUDA_VISIBLE_DEVICES"], "3");
  EXPECT_EQ(benv["TESSERA_GPU_SHARE_MILLI"], "500");
}

TEST(LauncherTest, CheckpointDirectoryAndIntervalComeFromTheSpec) {
  LaunchSettings s;
  TaskLaunch t = Worker(0);
  // Not stated in the spec: not set, and not inherited from the agent's own environment.
  auto none = AsMap(TaskEnvironment(t, 0, s, {"TESSERA_CHECKPOINT_INTERVAL_SECONDS=5"}));
  EXPECT_FALSE(none.contains("TESSERA_CHECKPOINT_DIR"));
  EXPECT_FALSE(none.contains("TESSERA_CHECKPOINT_INTERVAL_SECONDS"));
  t.checkpoint_dir = "/lustre/ckpt/llama";
  t.checkpoint_interval_seconds = 1800;
  auto env = AsMap(TaskEnvironment(t, 0, s, {}));
  EXPECT_EQ(env["TESSERA_CHECKPOINT_DIR"], "/lustre/ckpt/llama");
  EXPECT_EQ(env["TESSERA_CHECKPOINT_INTERVAL_SECONDS"], "1800");
  // And the interval travels from the controller to the agent.
  auto back = TaskLaunchFromJson(ToJson(t));
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(back->checkpoint_interval_seconds, 1800);
}

TEST(GpuInventoryTest, SimulatedGpusAreMarkedAsSuch) {
  auto inv = SimulatedGpus("8xH100", "node-0");
  ASSERT_TRUE(inv.has_value());
  EXPECT_TRUE(inv->simulated);
  ASSERT_EQ(inv->gpus.size(), 8u);
  EXPECT_EQ(inv->gpus[7].index, 7);
  EXPECT_EQ(inv->gpus[0].model, "H100");
  EXPECT_EQ(inv->gpus[0].name, "simulated H100");
  EXPECT_EQ(inv->gpus[0].memory_mib, 80 * 1024);
  EXPECT_EQ(SimulatedGpus("2x L40S", "n")->gpus.size(), 2u);
  EXPECT_FALSE(SimulatedGpus("17xH100", "n").has_value());
  EXPECT_FALSE(SimulatedGpus("H100", "n").has_value());
  EXPECT_FALSE(SimulatedGpus("4x", "n").has_value());
  EXPECT_FALSE(SimulatedGpus("4xH100;rm", "n").has_value());
}

TEST(GpuInventoryTest, ModelNamesFromTheDriver) {
  EXPECT_EQ(NormalizeGpuModel("NVIDIA H100 80GB HBM3"), "H100");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA H200"), "H200");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA A100-SXM4-80GB"), "A100");
  EXPECT_EQ(NormalizeGpuModel("Tesla V100-SXM2-32GB"), "V100");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA GeForce RTX 4090"), "RTX4090");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA L40S"), "L40S");
}

TEST(GpuInventoryTest, NoDriverIsAnErrorNotACrash) {
  auto inv = NvmlGpus();
  if (inv.has_value()) GTEST_SKIP() << "this machine has a GPU driver: " << inv->source;
  EXPECT_NE(inv.error().message.find("NVML"), std::string::npos);
}

TEST(LauncherTest, LaunchesInItsOwnProcessGroupWithALogUnderTheStateDirectory) {
  char tmpl[] = "/tmp/tessera-launch-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string state = tmpl;
  LaunchSettings s;
  s.state_dir = state;
  s.node = "n";
  TaskLaunch t = Worker(0);
  t.processes = 2;
  t.command = {"/bin/sh", "-c", "echo rank=$RANK local=$LOCAL_RANK; exit 7"};
  auto launched = LaunchTask(t, s);
  ASSERT_TRUE(launched.has_value()) << launched.error().message;
  ASSERT_EQ(launched->pids.size(), 2u);
  EXPECT_EQ(launched->pgid, launched->pids[0]);
  EXPECT_EQ(getpgid(launched->pids[1]), launched->pgid);  // exited but not reaped: still there
  for (pid_t pid : launched->pids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 7);
  }
  EXPECT_EQ(launched->log_path, state + "/logs/task-42.log");
  std::ifstream in(launched->log_path);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_NE(ss.str().find("rank=0 local=0"), std::string::npos) << ss.str();
  EXPECT_NE(ss.str().find("rank=1 local=1"), std::string::npos) << ss.str();
  EXPECT_TRUE(std::filesystem::is_directory(state + "/work/task-42"));

  TaskLaunch missing = Worker(0);
  missing.task_id = 43;
  missing.processes = 1;
  missing.command = {"/no/such/program"};
  auto failed = LaunchTask(missing, s);
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error().message, "exec /no/such/program: No such file or directory");
  TaskLaunch bad_dir = missing;
  bad_dir.command = {"true"};
  bad_dir.working_dir = "/no/such/dir";
  auto no_dir = LaunchTask(bad_dir, s);
  ASSERT_FALSE(no_dir.has_value());
  EXPECT_EQ(no_dir.error().message, "chdir /no/such/dir: No such file or directory");
  std::filesystem::remove_all(state);
}

// A single-process task leads a session of its own; it does not inherit the agent's blocked or
// ignored signals, its open descriptors, or its stdin; its PATH is the task's own.
TEST(LauncherTest, ASingleProcessTaskStartsCleanInItsOwnSession) {
  char tmpl[] = "/tmp/tessera-launch-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string state = tmpl;
  std::filesystem::create_directories(state + "/bin");
  {
    std::ofstream tool(state + "/bin/task-tool");
    tool << "#!/bin/sh\necho tool-ran\n";
  }
  std::filesystem::permissions(state + "/bin/task-tool", std::filesystem::perms::owner_all);
  // What the agent has and the task must not: a blocked SIGTERM, an ignored SIGINT, an open
  // descriptor without close-on-exec.
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &term, &old), 0);
  auto old_int = ::signal(SIGINT, SIG_IGN);
  const int leak = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(leak, 3);

  LaunchSettings s;
  s.state_dir = state;
  s.node = "n";
  TaskLaunch t = Worker(0);
  t.task_id = 7;
  t.processes = 1;
  t.shell = true;
  t.env = {{"PATH", state + "/bin:/usr/bin:/bin"}};
  t.command = {
      "task-tool; grep -E '^(SigBlk|SigIgn)' /proc/self/status; ls /proc/self/fd | sort -n | "
      "tr '\\n' ' '; echo; readlink /proc/self/fd/0; echo sid=$(cut -d' ' -f6 /proc/self/stat) "
      "pid=$$; pwd"};
  auto launched = LaunchTask(t, s);
  ::close(leak);
  ::signal(SIGINT, old_int);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(launched.has_value()) << launched.error().message;
  ASSERT_EQ(launched->pids.size(), 1u);
  EXPECT_EQ(launched->pgid, launched->pids[0]);
  int status = 0;
  ASSERT_EQ(waitpid(launched->pids[0], &status, 0), launched->pids[0]);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  std::ifstream in(launched->log_path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string log = ss.str();
  EXPECT_NE(log.find("tool-ran"), std::string::npos) << log;
  EXPECT_NE(log.find("SigBlk:\t0000000000000000"), std::string::npos) << log;
  // SIGINT (bit 1) and SIGTERM (bit 14) are back to their defaults.
  const auto ign = log.find("SigIgn:\t");
  ASSERT_NE(ign, std::string::npos) << log;
  const unsigned long long ignored = std::stoull(log.substr(ign + 8, 16), nullptr, 16);
  EXPECT_EQ(ignored & ((1ULL << (SIGINT - 1)) | (1ULL << (SIGTERM - 1))), 0ULL) << log;
  EXPECT_NE(log.find("\n0 1 2 3 \n"), std::string::npos) << "only stdio (3: ls's own dir)\n" << log;
  EXPECT_NE(log.find("/dev/null"), std::string::npos) << log;
  const std::string pid = std::to_string(launched->pids[0]);
  EXPECT_NE(log.find("sid=" + pid + " pid=" + pid), std::string::npos) << log;
  EXPECT_NE(log.find(state + "/work/task-7"), std::string::npos) << log;

  TaskLaunch missing = t;
  missing.task_id = 8;
  missing.shell = false;
  missing.command = {"no-such-tool-anywhere"};
  auto failed = LaunchTask(missing, s);
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error().message, "exec no-such-tool-anywhere: No such file or directory");
  std::filesystem::remove_all(state);
}

// --simulate-tasks: a task runs for what its `sleep SECONDS` states; anything else until stopped.
TEST(SimulatedTaskTest, RunsForTheSecondsOfItsSleep) {
  TaskLaunch t;
  t.command = {"sleep", "2.5"};
  EXPECT_EQ(SimulatedRunMs(t), 2500);
  t.command = {"sleep", "0"};
  EXPECT_EQ(SimulatedRunMs(t), 0);
  for (const auto& command : std::vector<std::vector<std::string>>{{"sleep", "-1"},
                                                                   {"sleep", "5s"},
                                                                   {"sleep"},
                                                                   {"sleep", "1", "2"},
                                                                   {"python3", "1"},
                                                                   {"sleep", "nan"},
                                                                   {"sleep", "1e300"}}) {
    t.command = command;
    EXPECT_EQ(SimulatedRunMs(t), std::nullopt) << command.size();
  }
  t.command = {"sleep", "3"};
  t.shell = true;  // a shell line: not parsed
  EXPECT_EQ(SimulatedRunMs(t), std::nullopt);
}

// A batched heartbeat of many emulated nodes goes in parts of bounded task and node counts;
// each node whole in exactly one part, in name order.
TEST(HeartbeatBatchesTest, PartsBoundTasksAndNodesAndKeepEachNodeWhole) {
  NodesHeartbeatRequest all;
  for (int n = 0; n < 10; ++n) {
    auto& hb = all.nodes["node-" + std::to_string(n)];
    for (int t = 0; t < (n == 7 ? 9 : 3); ++t) hb.tasks.push_back(TaskReport{});
  }
  const auto parts = SplitNodesHeartbeat(all, 7, 2);
  std::vector<std::string> order;
  for (const auto& part : parts) {
    std::size_t tasks = 0;
    for (const auto& [node, hb] : part.nodes) {
      order.push_back(node);
      tasks += hb.tasks.size();
      EXPECT_EQ(hb.tasks.size(), all.nodes.at(node).tasks.size()) << node;
    }
    EXPECT_LE(part.nodes.size(), 2U);
    if (part.nodes.size() > 1) {
      EXPECT_LE(tasks, 7U);  // node-7 (9 tasks) is alone
    }
  }
  std::vector<std::string> names;
  for (const auto& [node, hb] : all.nodes) names.push_back(node);
  EXPECT_EQ(order, names);
  EXPECT_EQ(parts.size(), 6U);  // {0,1} {2,3} {4,5} {6} {7} {8,9}
  EXPECT_EQ(SplitNodesHeartbeat({}).size(), 1U);
}

// Isolation (agent/task_isolation.h): Kubernetes' CPU request to shares to runc's v2 weight;
// oversold tasks get the BestEffort weight.
TEST(IsolationTest, CpuWeightFollowsTheRequestAndOversoldGetsTheLeast) {
  EXPECT_EQ(CpuWeightFor(1000, false), 39);       // 1024 shares
  EXPECT_EQ(CpuWeightFor(4000, false), 157);      // 4096 shares
  EXPECT_EQ(CpuWeightFor(0, false), 1);           // at least 2 shares
  EXPECT_EQ(CpuWeightFor(256000, false), 10000);  // the most shares: the most weight
  EXPECT_EQ(CpuWeightFor(4000, true), 1);
}

TEST(IsolationTest, MpsOnlyWithRealGpusAndADaemonAndOnlyForShares) {
  EXPECT_FALSE(DetectMps(true, "/nonexistent").available);
  EXPECT_EQ(DetectMps(true, "/nonexistent").reason, "simulated GPUs (no CUDA device to share)");
  const MpsSupport none = DetectMps(false, "/nonexistent/mps");
  EXPECT_FALSE(none.available);
  EXPECT_NE(none.reason.find("/nonexistent/mps/control missing"), std::string::npos);
  char tmpl[] = "/tmp/tessera-mps-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string pipe = tmpl;
  std::ofstream(pipe + "/control") << "";
  const MpsSupport mps = DetectMps(false, pipe);
  ASSERT_TRUE(mps.available) << mps.reason;
  TaskLaunch t = Worker(0);
  t.gpus = {3, 5};
  EXPECT_TRUE(MpsEnvironment(t, mps, 81920).empty());  // whole GPUs: nothing to share
  EXPECT_EQ(MpsSummary(t, mps, 81920), "MPS: not needed (whole GPUs)");
  t.gpu_milli = 250;
  auto env = MpsEnvironment(t, mps, 81920);
  EXPECT_EQ(env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"], "25");
  EXPECT_EQ(env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"], "0=20480M,1=20480M");  // renumbered from 0
  EXPECT_EQ(env["CUDA_MPS_PIPE_DIRECTORY"], pipe);
  LaunchSettings s;
  s.mps = &mps;
  s.gpu_memory_mib = 81920;
  EXPECT_EQ(AsMap(TaskEnvironment(t, 0, s, {}))["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"], "25");
  EXPECT_EQ(MpsSummary(t, none, 81920), "MPS: not possible: " + none.reason);
  std::filesystem::remove_all(pipe);
}

// Where the machine gives no cgroup v2 (this VM: cgroup v1), the launch says so and runs anyway.
TEST(IsolationTest, LaunchReportsWhatIsolationWasNotPossible) {
  char tmpl[] = "/tmp/tessera-iso-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string state = tmpl;
  LaunchSettings s;
  s.state_dir = state;
  s.node = "n";
  s.simulated_gpus = true;
  s.no_cgroups = "no cgroup v2 unified hierarchy at /sys/fs/cgroup";
  const MpsSupport mps = DetectMps(true, "/tmp/nvidia-mps");
  s.mps = &mps;
  TaskLaunch t = Worker(0);
  t.processes = 1;
  t.gpu_milli = 500;
  t.command = {"/bin/true"};
  auto launched = LaunchTask(t, s);
  ASSERT_TRUE(launched.has_value()) << launched.error().message;
  EXPECT_EQ(launched->isolation,
            "cgroup v2: not possible: no cgroup v2 unified hierarchy at /sys/fs/cgroup; MPS: not "
            "possible: simulated GPUs (no CUDA device to share)");
  for (pid_t pid : launched->pids) waitpid(pid, nullptr, 0);
  std::filesystem::remove_all(state);
}

// Reads `s` to its end as the CLI does (offsets acknowledging what was read), reaping its command
// as the agent's monitor would.
ExecOutput ReadAll(ExecSession& s, std::string* out, std::string* err) {
  ExecOutput r;
  std::int64_t o = 0, e = 0;
  bool reaped = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!r.done && std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (!reaped && ::waitpid(s.pid(), &status, WNOHANG) == s.pid()) {
      s.Exited(status);
      reaped = true;
    }
    r = s.Read(o, e, std::chrono::milliseconds(50));
    *out += r.out;
    *err += r.err;
    o = r.out_end;
    e = r.err_end;
  }
  return r;
}

ExecCommand Shell(const std::string& script, const std::string& dir) {
  ExecCommand c;
  c.argv = {"/bin/sh", "-c", script};
  c.env = {"PATH=/usr/bin:/bin", "GREETING=hi"};
  c.work_dir = dir;
  c.stdin_open = true;
  return c;
}

TEST(ExecSessionTest, OutputApartStdinAndExitCode) {
  const std::string dir = std::filesystem::temp_directory_path();
  auto s = ExecSession::Start(
      Shell("read line; echo \"$GREETING $line $(pwd)\"; echo oops >&2; exit 7", dir), 1, "u");
  ASSERT_TRUE(s) << s.error().message;
  ASSERT_TRUE((*s)->Write("there\n"));
  (*s)->CloseStdin();
  std::string out, err;
  const ExecOutput r = ReadAll(**s, &out, &err);
  EXPECT_TRUE(r.done);
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_EQ(out, "hi there " + dir + "\n");
  EXPECT_EQ(err, "oops\n");
}

TEST(ExecSessionTest, MoreOutputThanTheBufferArrivesWhole) {
  // 3 MiB through a 1 MiB buffer: the command waits while the reader is behind.
  auto s = ExecSession::Start(Shell("head -c 3145728 /dev/zero | tr '\\0' x", "/"), 1, "u");
  ASSERT_TRUE(s) << s.error().message;
  std::string out, err;
  const ExecOutput r = ReadAll(**s, &out, &err);
  EXPECT_TRUE(r.done);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(out.size(), 3145728u);
  EXPECT_EQ(out.find_first_not_of('x'), std::string::npos);
}

TEST(ExecSessionTest, AMissingCommandIsAnErrorNamingIt) {
  ExecCommand c = Shell("", "/");
  c.argv = {"no-such-command-anywhere"};
  auto s = ExecSession::Start(c, 1, "u");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("exec no-such-command-anywhere"), std::string::npos)
      << s.error().message;
  ::waitpid(-1, nullptr, WNOHANG);
}

}  // namespace
}  // namespace tessera
