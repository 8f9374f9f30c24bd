// The live-cluster subcommands of `tessera` (up, down, submit, get, describe, logs, cancel,
// release, bench live), each in its own <name>_command.cpp.
#pragma once

#include <CLI/CLI.hpp>

namespace tessera::cli {

void RegisterUpCommand(CLI::App& app);
void RegisterDownCommand(CLI::App& app);
void RegisterSubmitCommand(CLI::App& app);
void RegisterGetCommand(CLI::App& app);
void RegisterDescribeCommand(CLI::App& app);
void RegisterLogsCommand(CLI::App& app);
void RegisterExecCommand(CLI::App& app);  // exec_command.cpp
void RegisterCancelCommand(CLI::App& app);
void RegisterReleaseCommand(CLI::App& app);
void RegisterTopCommand(CLI::App& app);         // top_command.cpp
void RegisterCompletionCommand(CLI::App& app);  // completion_command.cpp
// Adds `metrics` under `bench` (after RegisterBenchLiveCommand).
void RegisterBenchMetricsCommand(CLI::App& app);
// cordon, uncordon and drain NODE (cordon_command.cpp).
void RegisterCordonCommands(CLI::App& app);
// Adds `live` under the `bench` subcommand, creating `bench` if no other part has.
void RegisterBenchLiveCommand(CLI::App& app);
// Adds `gateway` under `bench` (after RegisterBenchLiveCommand).
void RegisterBenchGatewayCommand(CLI::App& app);
// Adds `recovery` under `bench` (after RegisterBenchLiveCommand).
void RegisterBenchRecoveryCommand(CLI::App& app);
// Adds `store` under `bench`: SQLite and etcd side by side (bench_store_command.cpp).
void RegisterBenchStoreCommand(CLI::App& app);

}  // namespace tessera::cli
