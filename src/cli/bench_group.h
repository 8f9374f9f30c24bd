// The `tessera bench` group: each benchmark registers its own subcommand under it, in any order.
#pragma once

#include <CLI/CLI.hpp>

namespace tessera::cli {

// The `bench` subcommand of `app`, created on first use.
CLI::App& BenchGroup(CLI::App& app);

}  // namespace tessera::cli
