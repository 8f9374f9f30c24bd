// `tessera`: the command-line entry point. Each subcommand registers itself from its own file.
// A bare `tessera` prints the help; a word that names no command prints the help and
// "unknown command: WORD" (CLI11 alone would say only "A subcommand is required" or list the
// extra arguments).
#include <CLI/CLI.hpp>
#include <csignal>
#include <iostream>
#include <string_view>

#include "cli/commands.h"

namespace {

bool IsCommand(CLI::App& app, std::string_view word) {
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    if (sub->check_name(std::string(word))) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  // OpenSSL writes with write(2): a controller that dies mid-request (a failover over HTTPS)
  // must end that request with an error, not the process with SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{"tessera: a resource scheduler for shared GPU clusters", "tessera"};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", "tessera 0.1.0");
  tessera::cli::RegisterCommands(app);
  if (argc > 1 && argv[1][0] != '-' && !IsCommand(app, argv[1])) {
    std::cerr << app.help() << "\nerror: unknown command: " << argv[1] << "\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (app.get_subcommands().empty()) {
    std::cout << app.help();
    return 0;
  }
  return tessera::cli::ExitCode();
}
