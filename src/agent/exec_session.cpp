#include "agent/exec_session.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>

extern char** environ;

namespace tessera {

namespace {

using Clock = std::chrono::steady_clock;

// What the child reports through its close-on-exec pipe when a step before exec fails.
struct ChildFailure {
  int step;
  int err;
};
constexpr const char* kSteps[] = {"setsid", "cgroup", "open the terminal",
                                  "dup2",   "chdir",  "setgroups",
                                  "setgid", "setuid", "exec"};

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

std::string RandomId() {
  std::random_device rd;
  char hex[33];
  for (int i = 0; i < 4; ++i) std::snprintf(hex + 8 * i, 9, "%08x", rd());
  return std::string(hex, 32);
}

// The descriptors of the child's stdin, stdout and stderr, and what the parent keeps.
struct Plumbing {
  int child[3] = {-1, -1, -1};
  int master = -1;  // tty: the pty's master, for stdin and stdout
  int in = -1, out = -1, err = -1;
  std::string slave;  // tty: opened by the child after setsid, so it becomes its terminal
  ~Plumbing() {
    for (int& fd : child) CloseFd(fd);
  }
};

Status MakePipes(const ExecCommand& cmd, Plumbing& p) {
  if (cmd.tty) {
    p.master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    char name[128];
    if (p.master < 0 || ::grantpt(p.master) != 0 || ::unlockpt(p.master) != 0 ||
        ::ptsname_r(p.master, name, sizeof name) != 0) {
      return IoError(std::string("cannot open a pseudo-terminal: ") + std::strerror(errno));
    }
    p.slave = name;
    if (cmd.rows > 0 && cmd.cols > 0) {
      winsize ws{};
      ws.ws_row = static_cast<unsigned short>(cmd.rows);
      ws.ws_col = static_cast<unsigned short>(cmd.cols);
      ::ioctl(p.master, TIOCSWINSZ, &ws);
    }
    return {};
  }
  int in[2] = {-1, -1}, out[2], err[2];
  if (cmd.stdin_open ? ::pipe2(in, O_CLOEXEC) != 0
                     : (in[0] = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
    return IoError(std::string("stdin: ") + std::strerror(errno));
  p.child[0] = in[0];
  p.in = in[1];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
    return IoError(std::string("pipe: ") + std::strerror(errno));
  p.child[1] = out[1];
  p.out = out[0];
  p.child[2] = err[1];
  p.err = err[0];
  return {};
}

}  // namespace

Result<std::shared_ptr<ExecSession>> ExecSession::Start(const ExecCommand& cmd,
                                                        std::int64_t task_id, std::string user) {
  if (cmd.argv.empty() || cmd.argv[0].empty()) return InvalidArgument("command: empty");
  std::shared_ptr<ExecSession> s(new ExecSession(task_id, std::move(user)));
  Plumbing p;
  if (auto st = MakePipes(cmd, p); !st) {
    CloseFd(p.master);
    CloseFd(p.in);
    CloseFd(p.out);
    CloseFd(p.err);
    return std::unexpected(st.error());
  }
  // Everything the child needs, prepared before fork: it makes system calls only.
  std::vector<std::string> argv_strings = cmd.argv, env_strings = cmd.env;
  std::vector<char*> argv, envp;
  for (auto& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  const std::string procs = cmd.cgroup.empty() ? "" : cmd.cgroup + "/cgroup.procs";
  const bool drop = cmd.run_as.has_value();
  const std::vector<gid_t> groups = drop ? cmd.run_as->groups : std::vector<gid_t>{};
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return IoError(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    ::close(report[0]);
    ::close(report[1]);
    return IoError(std::string("fork: ") + std::strerror(e));
  }
  if (pid == 0) {
    auto fail = [&](int step) {
      ChildFailure f{step, errno};
      (void)!::write(report[1], &f, sizeof f);
      ::_exit(127);
    };
    if (::setsid() < 0) fail(0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGQUIT, SIGTSTP})
      ::signal(sig, SIG_DFL);
    if (!procs.empty()) {
      const int fd = ::open(procs.c_str(), O_WRONLY);
      if (fd < 0 || ::write(fd, "0", 1) != 1) fail(1);
      ::close(fd);
    }
    int fds[3] = {p.child[0], p.child[1], p.child[2]};
    if (!p.slave.empty()) {
      const int t = ::open(p.slave.c_str(), O_RDWR);
      if (t < 0 || ::ioctl(t, TIOCSCTTY, 0) != 0) fail(2);
      fds[0] = fds[1] = fds[2] = t;
    }
    for (int i = 0; i < 3; ++i) {
      if (::dup2(fds[i], i) < 0) fail(3);
    }
    if (report[1] > 3) ::close_range(3, static_cast<unsigned>(report[1]) - 1, 0);
    ::close_range(static_cast<unsigned>(report[1]) + 1, ~0U, 0);
    if (::chdir(cmd.work_dir.c_str()) != 0) fail(4);
    if (drop) {
      if (::setgroups(groups.size(), groups.data()) != 0) fail(5);
      if (::setgid(cmd.run_as->gid) != 0) fail(6);
      if (::setuid(cmd.run_as->uid) != 0 || ::getuid() == 0) fail(7);
    }
    environ = envp.data();
    ::execvp(argv[0], argv.data());
    fail(8);
  }
  ::close(report[1]);
  ChildFailure f{};
  ssize_t n;
  do {
    n = ::read(report[0], &f, sizeof f);
  } while (n < 0 && errno == EINTR);
  ::close(report[0]);
  s->pid_ = pid;
  s->tty_ = cmd.tty;
  s->last_read_ = Clock::now();
  if (cmd.tty) {
    s->stdin_fd_ = p.master;
    s->out_.fd = p.master;
    s->err_.eof = true;
  } else {
    s->stdin_fd_ = p.in;
    s->out_.fd = p.out;
    s->err_.fd = p.err;
  }
  if (s->stdin_fd_ >= 0)
    ::fcntl(s->stdin_fd_, F_SETFL, ::fcntl(s->stdin_fd_, F_GETFL) | O_NONBLOCK);
  if (n == static_cast<ssize_t>(sizeof f)) {
    // The child exited with 127; the agent's reaper collects it. Nothing else is left running.
    std::string what = kSteps[std::clamp(f.step, 0, 8)];
    if (f.step == 8) what += " " + cmd.argv[0];
    if (f.step == 4) what += " " + cmd.work_dir;
    s->exited_ = true;  // the destructor must not signal a pid that may be reused
    return FailedPrecondition(what + ": " + std::strerror(f.err));
  }
  if (::pipe2(s->wake_, O_CLOEXEC | O_NONBLOCK) != 0)
    return IoError(std::string("pipe: ") + std::strerror(errno));
  s->reader_ = std::thread([raw = s.get()] { raw->Pump(); });
  return s;
}

ExecSession::~ExecSession() {
  Kill();
  {
    std::lock_guard lock(mu_);
    out_.eof = err_.eof = true;
  }
  if (wake_[1] >= 0) (void)!::write(wake_[1], "x", 1);
  if (reader_.joinable()) reader_.join();
  if (stdin_fd_ != out_.fd) CloseFd(stdin_fd_);
  CloseFd(out_.fd);
  CloseFd(err_.fd);
  CloseFd(wake_[0]);
  CloseFd(wake_[1]);
}

void ExecSession::Pump() {
  char buf[65536];
  while (true) {
    pollfd fds[3];
    nfds_t n = 0;
    Stream* streams[2] = {nullptr, nullptr};
    {
      std::lock_guard lock(mu_);
      if (out_.eof && err_.eof) return;
      for (Stream* st : {&out_, &err_}) {
        if (st->eof || st->data.size() >= kMaxBuffered) continue;  // full: wait for a read
        streams[n] = st;
        fds[n++] = {st->fd, POLLIN, 0};
      }
    }
    fds[n++] = {wake_[0], POLLIN, 0};
    if (::poll(fds, n, 1000) < 0 && errno != EINTR) return;
    if ((fds[n - 1].revents & POLLIN) != 0) {
      while (::read(wake_[0], buf, sizeof buf) > 0) {
      }
    }
    for (nfds_t i = 0; i + 1 < n; ++i) {
      if (fds[i].revents == 0) continue;
      const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      std::lock_guard lock(mu_);
      // A pty's master reads EIO once the terminal's last holder closed it: its end of file.
      if (got <= 0) {
        streams[i]->eof = true;
      } else {
        streams[i]->data.append(buf, static_cast<std::size_t>(got));
      }
      cv_.notify_all();
    }
  }
}

Status ExecSession::Write(const std::string& data) {
  std::size_t done = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  std::lock_guard lock(in_mu_);  // not mu_: the reader must drain output meanwhile
  if (stdin_fd_ < 0) return FailedPrecondition("stdin is closed");
  while (done < data.size()) {
    const ssize_t n = ::write(stdin_fd_, data.data() + done, data.size() - done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR)
      return IoError(std::string("stdin: ") + std::strerror(errno));
    if (Clock::now() > deadline) return IoError("stdin: the command does not read its input");
    pollfd p{stdin_fd_, POLLOUT, 0};
    ::poll(&p, 1, 100);
  }
  return {};
}

void ExecSession::CloseStdin() {
  std::lock_guard lock(in_mu_);
  if (tty_) {
    // A terminal has no end of file to close: send its EOF character, as a keyboard would.
    termios t{};
    if (stdin_fd_ >= 0 && ::tcgetattr(stdin_fd_, &t) == 0)
      (void)!::write(stdin_fd_, &t.c_cc[VEOF], 1);
    return;
  }
  CloseFd(stdin_fd_);
}

void ExecSession::Resize(int rows, int cols) {
  std::lock_guard lock(in_mu_);
  if (!tty_ || rows <= 0 || cols <= 0 || stdin_fd_ < 0) return;
  winsize ws{};
  ws.ws_row = static_cast<unsigned short>(rows);
  ws.ws_col = static_cast<unsigned short>(cols);
  ::ioctl(stdin_fd_, TIOCSWINSZ, &ws);  // the kernel sends the command SIGWINCH
}

ExecOutput ExecSession::Read(std::int64_t out_offset, std::int64_t err_offset,
                             std::chrono::milliseconds wait) {
  std::unique_lock lock(mu_);
  last_read_ = Clock::now();
  bool made_room = false;
  for (auto [st, offset] : {std::pair{&out_, out_offset}, std::pair{&err_, err_offset}}) {
    const std::int64_t drop =
        std::clamp<std::int64_t>(offset - st->base, 0, static_cast<std::int64_t>(st->data.size()));
    if (drop == 0) continue;
    made_room |= st->data.size() >= kMaxBuffered;
    st->data.erase(0, static_cast<std::size_t>(drop));
    st->base += drop;
  }
  if (made_room) (void)!::write(wake_[1], "x", 1);
  auto end_of = [](const Stream& st) {
    return st.base + static_cast<std::int64_t>(st.data.size());
  };
  auto ready = [&] {
    return end_of(out_) > out_offset || end_of(err_) > err_offset ||
           (exited_ && out_.eof && err_.eof);
  };
  cv_.wait_for(lock, wait, ready);
  ExecOutput r;
  for (auto [st, offset, text, end] : {std::tuple{&out_, out_offset, &r.out, &r.out_end},
                                       std::tuple{&err_, err_offset, &r.err, &r.err_end}}) {
    const std::int64_t from = std::max(offset, st->base);
    if (from < end_of(*st)) *text = st->data.substr(static_cast<std::size_t>(from - st->base));
    *end = from + static_cast<std::int64_t>(text->size());
  }
  r.done = exited_ && out_.eof && err_.eof;
  r.exit_code = exit_code_;
  r.signal = signal_;
  return r;
}

void ExecSession::Exited(int wait_status) {
  std::lock_guard lock(mu_);
  exited_ = true;
  signal_ = WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : 0;
  exit_code_ = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + signal_;
  // What it left behind in its session (a daemon holding the pipes) ends with it, so the output
  // reaches its end.
  ::kill(-pid_, SIGKILL);
  cv_.notify_all();
}

void ExecSession::Kill() {
  std::lock_guard lock(mu_);
  if (pid_ > 0 && !exited_) ::kill(-pid_, SIGKILL);
}

bool ExecSession::Idle(Clock::time_point now) const {
  std::lock_guard lock(mu_);
  return now - last_read_ > ExecSessions::kIdle;
}

ExecSessions::~ExecSessions() {
  std::lock_guard lock(mu_);
  for (auto& [id, s] : sessions_) s->Kill();
}

Result<std::string> ExecSessions::Start(const ExecCommand& cmd, std::int64_t task_id,
                                        const std::string& user) {
  std::lock_guard lock(mu_);
  if (sessions_.size() >= kMaxSessions)
    return FailedPrecondition("exec: " + std::to_string(sessions_.size()) +
                              " sessions open, the most an agent runs at once");
  auto s = ExecSession::Start(cmd, task_id, user);
  if (!s) return std::unexpected(s.error());
  std::string id = RandomId();
  sessions_.emplace(id, std::move(*s));
  return id;
}

std::shared_ptr<ExecSession> ExecSessions::Find(const std::string& id, const std::string& user) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second->user() != user) return nullptr;
  return it->second;
}

void ExecSessions::Remove(const std::string& id) {
  std::shared_ptr<ExecSession> gone;
  {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return;
    gone = std::move(it->second);
    sessions_.erase(it);
  }
}

bool ExecSessions::Reaped(pid_t pid, int wait_status) {
  std::lock_guard lock(mu_);
  for (auto& [id, s] : sessions_) {
    if (s->pid() != pid) continue;
    s->Exited(wait_status);
    return true;
  }
  return false;
}

void ExecSessions::EndTask(std::int64_t task_id) {
  std::lock_guard lock(mu_);
  for (auto& [id, s] : sessions_) {
    if (s->task_id() == task_id) s->Kill();
  }
}

void ExecSessions::Expire() {
  std::vector<std::shared_ptr<ExecSession>> gone;
  {
    std::lock_guard lock(mu_);
    const auto now = Clock::now();
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (!it->second->Idle(now)) {
        ++it;
        continue;
      }
      it->second->Kill();
      gone.push_back(std::move(it->second));
      it = sessions_.erase(it);
    }
  }
}

std::size_t ExecSessions::size() {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

}  // namespace tessera
