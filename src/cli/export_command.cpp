// `tessera export -o FILE`: the live cluster as one JSON document (GET /v1/export, admins
// only): jobs with their full specs, units and tasks, nodes with their GPU models and
// topology, the queue tree, the controller's policies and seed, and the event log with each
// scheduling cycle's record. `tessera sim --experiment replay --from-export FILE` replays it.
#include "cli/export_command.h"

#include <fmt/core.h>

#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "cli/live_client.h"
#include "cli/live_commands.h"

namespace tessera::cli {

namespace {

struct ExportFlags {
  ClusterFlags cluster;
  std::string out;
};

Status RunExport(const ExportFlags& f) {
  if (f.out.empty()) return InvalidArgument("export: -o FILE is required (- for stdout)");
  auto url = ResolveServer(f.cluster);
  if (!url) return std::unexpected(url.error());
  ApiClient api(*url, 300);
  auto out = JsonOf(api.Get("/v1/export"));
  if (!out) return std::unexpected(out.error());
  const std::string text = out->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (f.out == "-") {
    std::cout << text << "\n";
    return {};
  }
  std::ofstream file(f.out, std::ios::binary | std::ios::trunc);
  file << text << "\n";
  if (!file.flush()) return IoError("export: -o: cannot write " + f.out);
  std::cerr << fmt::format("exported {} jobs, {} nodes, {} events to {}\n", (*out)["jobs"].size(),
                           (*out)["nodes"].size(), (*out)["events"].size(), f.out);
  return {};
}

}  // namespace

void RegisterExportCommand(CLI::App& app) {
  auto flags = std::make_shared<ExportFlags>();
  auto* cmd = app.add_subcommand(
      "export",
      "Write the live cluster (jobs with specs and tasks, nodes, queue tree, events) as JSON, "
      "for `tessera sim --experiment replay --from-export FILE`; admins only");
  cmd->add_option("-o,--out", flags->out, "Output file (- for stdout)");
  AddClusterFlags(cmd, &flags->cluster);
  cmd->callback([flags] { SetExitCode(RunOrReport([&] { return RunExport(*flags); })); });
}

}  // namespace tessera::cli
