#include "cli/commands.h"

namespace tessera::cli {

namespace {
int g_exit_code = 0;  // set by the one subcommand that runs
}  // namespace

void SetExitCode(int code) { g_exit_code = code; }
int ExitCode() { return g_exit_code; }

void RegisterCommands(CLI::App& app) { RegisterSimCommand(app); }

}  // namespace tessera::cli
