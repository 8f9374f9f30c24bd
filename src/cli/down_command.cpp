// `tessera down --state DIR`: stops the all-in-one cluster started by `tessera up`: the
// controller first (so that nothing is rescheduled while nodes go away), then the agents, which
// stop their tasks (SIGTERM, SIGKILL after at most 10 s), then etcd's members (--store etcd).
// The state stays for the next `up`.
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "cli/daemon.h"
#include "cli/live_client.h"
#include "cli/live_commands.h"
#include "cli/up_etcd.h"

namespace tessera::cli {

namespace {

Status RunDown(std::string state) {
  namespace fs = std::filesystem;
  if (state.empty()) {
    if (const char* env = std::getenv("TESSERA_STATE"); env != nullptr) state = env;
  }
  if (state.empty()) return InvalidArgument("--state DIR is required (or set TESSERA_STATE)");
  if (!fs::is_directory(state)) return NotFound("no cluster state in " + state);
  int stopped = 0;
  std::error_code ec;
  if (auto pid = LivePid(state + "/gateway.pid", "tessera-gateway")) {  // tessera up --gateway-port
    if (!Terminate(*pid, "tessera-gateway", 5000))
      return Internal("tessera-gateway (pid " + std::to_string(*pid) + ") did not stop");
    std::cout << "stopped tessera-gateway (pid " << *pid << ")\n";
    ++stopped;
  }
  fs::remove(state + "/gateway.pid", ec);
  fs::remove(state + "/gateway-endpoint", ec);
  if (auto pid = LivePid(state + "/tesserad.pid", "tesserad")) {
    if (!Terminate(*pid, "tesserad", 10000))
      return Internal("tesserad (pid " + std::to_string(*pid) + ") did not stop");
    std::cout << "stopped tesserad (pid " << *pid << ")\n";
    ++stopped;
  }
  if (const int more = StopMoreControllers(state); more > 0) {
    std::cout << "stopped " << more << " more controller(s)\n";
    stopped += more;
  }
  fs::remove(state + "/tesserad.pid", ec);
  fs::remove(state + "/endpoint", ec);
  std::vector<std::pair<pid_t, std::string>> agents;
  for (const auto& entry : fs::directory_iterator(state + "/agents", ec)) {
    if (entry.path().extension() != ".pid") continue;
    if (auto pid = LivePid(entry.path().string(), "tessera-agent")) {
      ::kill(*pid, SIGTERM);  // all at once; each stops its own tasks
      agents.emplace_back(*pid, entry.path().stem().string());
    }
    fs::remove(entry.path(), ec);
  }
  for (const auto& [pid, node] : agents) {
    if (!Terminate(pid, "tessera-agent", 15000)) {
      return Internal("agent " + node + " (pid " + std::to_string(pid) + ") did not stop");
    }
    ++stopped;
  }
  if (!agents.empty()) std::cout << "stopped " << agents.size() << " agent(s) and their tasks\n";
  // etcd last: the controllers and agents are gone, nothing writes any more.
  if (const int members = StopEtcdCluster(state); members > 0) {
    std::cout << "stopped " << members << " etcd member(s)\n";
    stopped += members;
  }
  if (stopped == 0) std::cout << "no cluster running in " << state << "\n";
  return {};
}

}  // namespace

void RegisterDownCommand(CLI::App& app) {
  auto state = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand(
      "down", "Stop the all-in-one cluster started by `tessera up` (state is kept)");
  cmd->add_option("--state", *state,
                  "State directory given to `tessera up`; default $TESSERA_STATE");
  cmd->callback([state] { SetExitCode(RunOrReport([&] { return RunDown(*state); })); });
}

}  // namespace tessera::cli
