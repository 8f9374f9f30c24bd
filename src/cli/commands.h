// Registration of the `tessera` subcommands. Each Register*Command adds one subcommand whose
// callback runs the command and records its exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace tessera::cli {

void RegisterCommands(CLI::App& app);
void SetExitCode(int code);
int ExitCode();

void RegisterSimCommand(CLI::App& app);
void RegisterGenCommand(CLI::App& app);
void RegisterBenchCommand(CLI::App& app);

// "a,b,,c" -> {"a", "b", "c"}: a comma-separated flag's items, empty ones dropped.
std::vector<std::string> SplitCommas(const std::string& s);

}  // namespace tessera::cli
