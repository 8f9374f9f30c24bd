// `tessera exec JOB [--rank N] [-i] [-t] -- CMD...`: runs CMD in a running task's environment
// (its node, working directory, environment, user and cgroup), through the controller, which
// authorises it like the job's logs, to the task's agent; prints its stdout and stderr as they
// come and exits with its exit code (128 + signal when it was killed), as `kubectl exec` does.
// -i relays stdin; -t runs it on a pseudo-terminal on the agent (an interactive shell: `tessera
// exec -it JOB -- bash`), with this terminal in raw mode and its window size passed on.
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "cli/commands.h"
#include "cli/live_client.h"
#include "cli/live_commands.h"
#include "spec/document.h"

namespace tessera::cli {

namespace {

using Json = nlohmann::json;

struct ExecFlags {
  ClusterFlags cluster;
  std::string name;
  std::string queue;
  int rank = 0;
  bool interactive = false;
  bool tty = false;
  std::vector<std::string> command;
};

volatile sig_atomic_t g_resized = 0;
void OnWinch(int) { g_resized = 1; }

// This terminal in raw mode (keys go to the remote command as typed, ^C included) while alive.
class RawTerminal {
 public:
  explicit RawTerminal(bool on) {
    if (!on || ::tcgetattr(0, &saved_) != 0) return;
    termios raw = saved_;
    ::cfmakeraw(&raw);
    active_ = ::tcsetattr(0, TCSANOW, &raw) == 0;
  }
  ~RawTerminal() {
    if (active_) ::tcsetattr(0, TCSANOW, &saved_);
  }

 private:
  termios saved_{};
  bool active_ = false;
};

bool WindowSize(int* rows, int* cols) {
  winsize ws{};
  for (int fd : {0, 1}) {
    if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0) {
      *rows = ws.ws_row;
      *cols = ws.ws_col;
      return true;
    }
  }
  return false;
}

void WriteAll(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n <= 0) return;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

// Relays stdin (and window size changes) to the session until stdin ends or `done`.
void RelayInput(const std::string& url, const std::string& io, bool tty,
                const std::atomic<bool>& done) {
  ApiClient api(url);
  char buf[4096];
  while (!done) {
    if (tty && g_resized) {
      g_resized = 0;
      int rows = 0, cols = 0;
      if (WindowSize(&rows, &cols))
        api.Post(io + "&rows=" + std::to_string(rows) + "&cols=" + std::to_string(cols), "",
                 "application/octet-stream");
    }
    pollfd p{0, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::read(0, buf, sizeof buf);
    if (n <= 0) {
      api.Post(io + "&closeStdin=true", "", "application/octet-stream");
      return;
    }
    auto res =
        api.Post(io, std::string(buf, static_cast<std::size_t>(n)), "application/octet-stream");
    if (!res || res->status >= 300) return;  // the session ended; the output loop says why
  }
}

std::int64_t HeaderInt(const HttpResponse& r, const std::string& name) {
  auto it = r.headers.find(name);
  return it == r.headers.end() ? 0 : std::atoll(it->second.c_str());
}

Status RunExec(const ExecFlags& f, int* exit_code) {
  auto url = ResolveServer(f.cluster);
  if (!url) return std::unexpected(url.error());
  ApiClient api(*url);
  auto queue = ResolveJobQueue(api, f.name, f.queue);
  if (!queue) return std::unexpected(queue.error());
  const std::string base = "/v1/exec/" + PathOf(*queue, f.name) + "?rank=" + std::to_string(f.rank);
  Json start = {{"command", f.command}, {"tty", f.tty}, {"stdin", f.interactive}};
  int rows = 0, cols = 0;
  if (f.tty && WindowSize(&rows, &cols)) {
    start["rows"] = rows;
    start["cols"] = cols;
  }
  if (const char* term = std::getenv("TERM"); f.tty && term != nullptr) start["term"] = term;
  auto created = JsonOf(api.Post(base, DumpJson(start), "application/json"));
  if (!created) return std::unexpected(created.error());
  const std::string io = base + "&session=" + created->value("session", "");

  if (f.tty) ::signal(SIGWINCH, OnWinch);
  RawTerminal raw(f.tty && f.interactive && ::isatty(0));
  std::atomic<bool> done{false};
  std::thread input;
  if (f.interactive) input = std::thread([&] { RelayInput(*url, io, f.tty, done); });
  std::int64_t out = 0, err = 0;
  Status result;
  while (true) {
    auto res = api.Post(
        io + "&out=" + std::to_string(out) + "&err=" + std::to_string(err) + "&waitMs=2000", "",
        "application/octet-stream");
    if (!res || res->status != 200) {
      auto e = JsonOf(res);  // the API's error, when it sent one
      result = e ? Status(Internal("HTTP " + std::to_string(res->status)))
                 : Status(std::unexpected(e.error()));
      break;
    }
    const auto split = static_cast<std::size_t>(std::clamp<std::int64_t>(
        HeaderInt(*res, "X-Tessera-Stdout-Bytes"), 0, static_cast<std::int64_t>(res->body.size())));
    WriteAll(1, res->body.data(), split);
    WriteAll(2, res->body.data() + split, res->body.size() - split);
    out = HeaderInt(*res, "X-Tessera-Stdout-Offset");
    err = HeaderInt(*res, "X-Tessera-Stderr-Offset");
    if (res->headers.contains("X-Tessera-Exited") &&
        res->headers.at("X-Tessera-Exited") == "true") {
      *exit_code = static_cast<int>(HeaderInt(*res, "X-Tessera-Exit-Code"));
      break;
    }
  }
  done = true;
  if (input.joinable()) input.join();
  return result;
}

}  // namespace

void RegisterExecCommand(CLI::App& app) {
  auto flags = std::make_shared<ExecFlags>();
  auto* cmd = app.add_subcommand(
      "exec", "Run a command in a running task of a job (-it: an interactive shell)");
  cmd->add_option("name", flags->name, "Job name")->required();
  cmd->add_option("command", flags->command, "The command, after --")->required();
  cmd->add_option("--rank", flags->rank, "Task rank (TASK_INDEX for a BatchJob)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--queue", flags->queue,
                  "Queue of the job (needed only when the name is in several)");
  cmd->add_flag("-i,--stdin", flags->interactive, "Pass stdin to the command");
  cmd->add_flag("-t,--tty", flags->tty, "Run it on a terminal (with -i: an interactive shell)");
  AddClusterFlags(cmd, &flags->cluster);
  cmd->callback([flags] {
    int code = 0;
    const int rc = RunOrReport([&] { return RunExec(*flags, &code); });
    SetExitCode(rc != 0 ? rc : code);
  });
}

}  // namespace tessera::cli
