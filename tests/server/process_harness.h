// Test helpers for real processes: temporary directories, child processes that die with the
// test (PR_SET_PDEATHSIG), running a command to completion with its output, waiting for a
// condition with a deadline, and a watchdog that ends a test (and every process it started)
// when it runs past its time. Header-only; used by the integration and end-to-end tests.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace tessera::testing {

// Over HTTPS a request to a process the test killed may write to a closed socket (OpenSSL
// writes with write(2)): an error for that request, not SIGPIPE for the whole test.
inline const bool kSigpipeIgnored = [] {
  ::signal(SIGPIPE, SIG_IGN);
  return true;
}();

// Where tesserad, tessera-agent and tessera are: $TESSERA_BIN_DIR, else the directory of the
// test executable itself (CMake puts them side by side).
inline std::string BinDir() {
  const char* dir = std::getenv("TESSERA_BIN_DIR");
  if (dir != nullptr && *dir != '\0') return dir;
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("build") : self.parent_path().string();
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A temporary directory removed at the end of its scope.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "tessera-test") {
    std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    path_ = ::mkdtemp(buf.data()) ? buf.data() : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Every pid and process group a test started, so that a failing or timed-out test still
// leaves nothing running.
class ProcessRegistry {
 public:
  static ProcessRegistry& Get() {
    static ProcessRegistry r;
    return r;
  }
  void AddPid(pid_t pid) {
    std::lock_guard lock(mu_);
    pids_.insert(pid);
  }
  void RemovePid(pid_t pid) {
    std::lock_guard lock(mu_);
    pids_.erase(pid);
  }
  void AddGroup(pid_t pgid) {
    std::lock_guard lock(mu_);
    groups_.insert(pgid);
  }
  void KillAll() {
    std::lock_guard lock(mu_);
    for (pid_t pid : pids_) ::kill(pid, SIGKILL);
    for (pid_t g : groups_) ::kill(-g, SIGKILL);
    for (pid_t pid : pids_) ::waitpid(pid, nullptr, 0);
    pids_.clear();
    groups_.clear();
  }

 private:
  std::mutex mu_;
  std::set<pid_t> pids_;
  std::set<pid_t> groups_;
};

// Ends the whole test binary (after killing what it started) when a test overruns.
class Watchdog {
 public:
  Watchdog(std::chrono::seconds limit, std::string what) : what_(std::move(what)) {
    thread_ = std::thread([this, limit] {
      std::unique_lock lock(mu_);
      if (!cv_.wait_for(lock, limit, [this] { return done_; })) {
        std::fprintf(stderr, "watchdog: %s ran past %lld s; killing its processes\n", what_.c_str(),
                     static_cast<long long>(limit.count()));
        ProcessRegistry::Get().KillAll();
        std::_Exit(124);
      }
    });
  }
  ~Watchdog() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::string what_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// Starts `argv` with stdout and stderr appended to `log`; the child dies with the test.
inline pid_t Spawn(const std::vector<std::string>& argv, const std::string& log,
                   const std::vector<std::string>& extra_env = {}) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    for (const auto& kv : extra_env) ::putenv(const_cast<char*>(kv.c_str()));
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ProcessRegistry::Get().AddPid(pid);
  return pid;
}

// Sends `sig` and reaps; SIGKILL after `grace_ms` if still alive.
inline int Stop(pid_t pid, int sig = SIGTERM, int grace_ms = 15000) {
  if (pid <= 0) return -1;
  ::kill(pid, sig);
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ProcessRegistry::Get().RemovePid(pid);
  return status;
}

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `argv` to completion (at most `timeout_s`), capturing its output.
inline CommandResult RunCommand(const std::vector<std::string>& argv, int timeout_s = 60,
                                const std::string& stdin_text = "",
                                const std::vector<std::string>& extra_env = {}) {
  TempDir dir("tessera-cmd");
  const std::string out_path = dir.path() + "/out", err_path = dir.path() + "/err",
                    in_path = dir.path() + "/in";
  std::ofstream(in_path) << stdin_text;
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    const int in = ::open(in_path.c_str(), O_RDONLY);
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    for (const auto& kv : extra_env) ::putenv(const_cast<char*>(kv.c_str()));
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ProcessRegistry::Get().AddPid(pid);
  CommandResult r;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      r.err = "timed out after " + std::to_string(timeout_s) + " s\n";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ProcessRegistry::Get().RemovePid(pid);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = ReadFile(out_path);
  r.err += ReadFile(err_path);
  return r;
}

// Polls `pred` every 20 ms until it holds or `seconds` pass.
inline bool WaitFor(const std::function<bool()>& pred, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<long>(seconds * 1000));
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

inline bool ProcessAlive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; }
inline bool GroupAlive(pid_t pgid) { return pgid > 0 && ::kill(-pgid, 0) == 0; }

}  // namespace tessera::testing
