// `tessera exec` on the agent's side: a command run in a running task's environment (its
// working directory, environment, user and cgroup), on a pseudo-terminal (`tty`, for an
// interactive shell, as `kubectl exec -it` and `srun --pty`) or on pipes (stdout and stderr
// apart). Its output is kept in memory until the caller has read it (offsets acknowledge what it
// has), at most kMaxBuffered bytes per stream: a caller that stops reading stops the command's
// output (backpressure), not the agent.
//
// The agent reaps every child (it is their subreaper and reaps with waitpid(-1)), so an exit is
// handed in through ExecSessions::Reaped. Sessions end with their task (EndTask), when idle for
// kIdleMs without a read (Expire), or when their command has exited and its last output was read.
//
// Thread-safety: ExecSessions and ExecSession are thread-safe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/launcher.h"
#include "core/status.h"

namespace tessera {

// What to run, prepared by the agent from the task's launch.
struct ExecCommand {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // NAME=VALUE, the task's
  std::string work_dir;
  std::string cgroup;  // the task's cgroup directory, or empty
  std::optional<RunAsUser> run_as;
  bool tty = false;
  bool stdin_open = false;  // without a tty: a pipe for stdin (else /dev/null)
  int rows = 0, cols = 0;   // tty only; 0 = the kernel's default
};

// One read of a session's output, from the offsets the caller has.
struct ExecOutput {
  std::string out, err;
  std::int64_t out_end = 0, err_end = 0;  // offsets after `out` and `err`
  bool done = false;                      // exited and everything read
  int exit_code = 0;
  int signal = 0;
};

class ExecSession {
 public:
  static constexpr std::size_t kMaxBuffered = 1 << 20;

  static Result<std::shared_ptr<ExecSession>> Start(const ExecCommand& cmd, std::int64_t task_id,
                                                    std::string user);
  ~ExecSession();

  pid_t pid() const { return pid_; }
  std::int64_t task_id() const { return task_id_; }
  const std::string& user() const { return user_; }

  Status Write(const std::string& data);
  void CloseStdin();
  void Resize(int rows, int cols);
  // Waits up to `wait` for output beyond the offsets (or the end); drops what lies before them.
  ExecOutput Read(std::int64_t out_offset, std::int64_t err_offset, std::chrono::milliseconds wait);
  void Exited(int wait_status);
  void Kill();
  bool Idle(std::chrono::steady_clock::time_point now) const;

 private:
  struct Stream {
    int fd = -1;
    std::string data;       // from `base`
    std::int64_t base = 0;  // offset of data[0]
    bool eof = false;
  };
  ExecSession(std::int64_t task_id, std::string user) : task_id_(task_id), user_(std::move(user)) {}
  void Pump();  // the reader thread: output into the streams until every one has ended

  const std::int64_t task_id_;
  const std::string user_;
  pid_t pid_ = 0;
  bool tty_ = false;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::mutex in_mu_;   // stdin_fd_ (writes, close, resize)
  int stdin_fd_ = -1;  // the pty's master (owned by out_) or the stdin pipe
  Stream out_, err_;
  bool exited_ = false;
  int exit_code_ = 0, signal_ = 0;
  std::chrono::steady_clock::time_point last_read_;
  int wake_[2] = {-1, -1};  // wakes the reader thread (a read made room, or the end)
  std::thread reader_;
};

class ExecSessions {
 public:
  static constexpr auto kIdle = std::chrono::seconds(60);
  // Sessions at once (each holds a process and up to two endpoint threads); the controller's
  // caps (server/exec_session_table.h) are usually lower.
  static constexpr std::size_t kMaxSessions = 16;
  ~ExecSessions();

  // Starts `cmd` and returns the new session's id (128 random bits, hex); refused beyond
  // kMaxSessions.
  Result<std::string> Start(const ExecCommand& cmd, std::int64_t task_id, const std::string& user);
  // The session `id` if `user` opened it.
  std::shared_ptr<ExecSession> Find(const std::string& id, const std::string& user);
  void Remove(const std::string& id);
  // A child the agent reaped: true when it was a session's command.
  bool Reaped(pid_t pid, int wait_status);
  void EndTask(std::int64_t task_id);
  void Expire();  // kills and drops sessions no one read for kIdle
  std::size_t size();

 private:
  std::mutex mu_;  // held across a start's fork, so the reaper cannot miss its pid
  std::map<std::string, std::shared_ptr<ExecSession>> sessions_;
};

}  // namespace tessera
