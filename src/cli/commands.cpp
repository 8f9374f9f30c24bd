#include "cli/commands.h"

#include <sstream>

#ifdef TESSERA_WITH_LIVE
#include "cli/export_command.h"
#include "cli/live_commands.h"
#endif

namespace tessera::cli {

namespace {
int g_exit_code = 0;  // set by the one subcommand that runs
}  // namespace

void SetExitCode(int code) { g_exit_code = code; }
int ExitCode() { return g_exit_code; }

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

void RegisterCommands(CLI::App& app) {
  RegisterSimCommand(app);
  RegisterGenCommand(app);
  RegisterBenchCommand(app);
#ifdef TESSERA_WITH_LIVE
  RegisterUpCommand(app);
  RegisterDownCommand(app);
  RegisterSubmitCommand(app);
  RegisterGetCommand(app);
  RegisterDescribeCommand(app);
  RegisterLogsCommand(app);
  RegisterExecCommand(app);
  RegisterCancelCommand(app);
  RegisterReleaseCommand(app);
  RegisterExportCommand(app);
  RegisterTopCommand(app);
  RegisterCompletionCommand(app);
  RegisterCordonCommands(app);
  RegisterBenchLiveCommand(app);  // last: adds `live` under a `bench` registered before it
  RegisterBenchGatewayCommand(app);
  RegisterBenchServingCommand(app);
  RegisterBenchRecoveryCommand(app);
  RegisterBenchStoreCommand(app);
  RegisterBenchMetricsCommand(app);
#endif
}

}  // namespace tessera::cli
