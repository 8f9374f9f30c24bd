#include "cli/daemon.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace tessera::cli {

std::string SelfDirectory() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return ".";
  return exe.parent_path().string();
}

Result<pid_t> SpawnDetached(const std::vector<std::string>& argv_strings,
                            const std::string& log_path) {
  std::vector<char*> argv;
  for (const auto& a : argv_strings) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return IoError("cannot open " + log_path + ": " + std::strerror(errno));
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) {
    ::close(log_fd);
    return IoError(std::string("pipe: ") + std::strerror(errno));
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    return IoError(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(pipefd[0]);
    ::setsid();
    const int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    if (pipefd[1] > 3) ::close_range(3, static_cast<unsigned>(pipefd[1]) - 1, 0);
    ::close_range(static_cast<unsigned>(pipefd[1]) + 1, ~0U, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execv(argv[0], argv.data());
    const int err = errno;
    (void)!::write(pipefd[1], &err, sizeof err);
    ::_exit(127);
  }
  ::close(pipefd[1]);
  ::close(log_fd);
  int err = 0;
  ssize_t n;
  do {
    n = ::read(pipefd[0], &err, sizeof err);
  } while (n < 0 && errno == EINTR);
  ::close(pipefd[0]);
  if (n == static_cast<ssize_t>(sizeof err)) {
    ::waitpid(pid, nullptr, 0);
    return IoError("cannot run " + argv_strings[0] + ": " + std::strerror(err));
  }
  return pid;
}

bool ProcessIs(pid_t pid, const std::string& name) {
  if (pid <= 0 || ::kill(pid, 0) != 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
  std::string arg0;
  std::getline(in, arg0, '\0');
  if (arg0.empty()) return false;  // a zombie has no command line
  return std::filesystem::path(arg0).filename() == name;
}

std::optional<pid_t> LivePid(const std::string& pid_file, const std::string& name) {
  std::ifstream in(pid_file);
  long pid = 0;
  if (!(in >> pid) || pid <= 0) return std::nullopt;
  if (!ProcessIs(static_cast<pid_t>(pid), name)) return std::nullopt;
  return static_cast<pid_t>(pid);
}

bool Terminate(pid_t pid, const std::string& name, int grace_ms) {
  if (!ProcessIs(pid, name)) return true;
  ::kill(pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    ::waitpid(pid, nullptr, WNOHANG);  // reaps it when it is our own child
    if (!ProcessIs(pid, name)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid, SIGKILL);
  for (int i = 0; i < 40; ++i) {
    ::waitpid(pid, nullptr, WNOHANG);
    if (!ProcessIs(pid, name)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

bool WriteText(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return false;
    out << text;
    if (!out) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

ProcessUse UseOf(pid_t pid) {
  ProcessUse u;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    std::istringstream in(line);
    std::string key;
    double kib = 0;
    in >> key >> kib;
    if (key == "VmRSS:") u.rss_mib = kib / 1024;
    if (key == "VmHWM:") u.peak_rss_mib = kib / 1024;
  }
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto paren = all.rfind(')');
  if (paren != std::string::npos) {
    std::istringstream in(all.substr(paren + 2));
    std::string field;
    double utime = 0, stime = 0;
    for (int f = 3; f <= 15 && in >> field; ++f) {
      if (f == 14) utime = std::stod(field);
      if (f == 15) stime = std::stod(field);
    }
    u.cpu_seconds = (utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  }
  return u;
}

}  // namespace tessera::cli
