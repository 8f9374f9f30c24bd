// Starting and stopping the background processes of an all-in-one cluster (`tessera up` and
// `down`, and the live benchmark): each runs in its own session (setsid) with its output
// appended to a log file, and is identified afterwards by pid file plus executable name, so a
// recycled pid is never signalled.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace tessera::cli {

// The directory holding the running `tessera` executable (where tesserad and tessera-agent
// are installed next to it).
std::string SelfDirectory();

// Starts `argv` (argv[0] a path) detached, output appended to `log_path`; returns its pid.
Result<pid_t> SpawnDetached(const std::vector<std::string>& argv, const std::string& log_path);

// True when `pid` is alive and its executable's name is `name`.
bool ProcessIs(pid_t pid, const std::string& name);

// The pid in `pid_file`, when it names a live process called `name`.
std::optional<pid_t> LivePid(const std::string& pid_file, const std::string& name);

// SIGTERM, then SIGKILL after `grace_ms`; returns true once the process is gone.
bool Terminate(pid_t pid, const std::string& name, int grace_ms);

bool WriteText(const std::string& path, const std::string& text);

// One process's resident memory (VmRSS, VmHWM: its peak) in MiB and CPU seconds so far.
struct ProcessUse {
  double rss_mib = 0;
  double peak_rss_mib = 0;
  double cpu_seconds = 0;
};
ProcessUse UseOf(pid_t pid);

}  // namespace tessera::cli
