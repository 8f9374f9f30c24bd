// `tessera export` (export_command.cpp): the live cluster as one JSON document.
#pragma once

#include <CLI/CLI.hpp>

namespace tessera::cli {

void RegisterExportCommand(CLI::App& app);

}  // namespace tessera::cli
