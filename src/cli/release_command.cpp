// `tessera release NAME... | --all`: lets held jobs (`tessera submit --hold`) be scheduled. One
// request, one commit: every named job is released together, or none when a name is unknown.
#include <iostream>

#include "cli/commands.h"
#include "cli/live_client.h"
#include "cli/live_commands.h"

namespace tessera::cli {

namespace {

struct ReleaseFlags {
  ClusterFlags cluster;
  std::vector<std::string> names;
  std::string queue;
  bool all = false;
};

Status RunRelease(const ReleaseFlags& f) {
  if (f.all == !f.names.empty()) {
    return InvalidArgument("release: give job names or --all (one of them)");
  }
  auto url = ResolveServer(f.cluster);
  if (!url) return std::unexpected(url.error());
  ApiClient api(*url);
  nlohmann::json body = nlohmann::json::object();
  if (f.all) {
    body["all"] = true;
  } else {
    body["names"] = f.names;
  }
  if (!f.queue.empty()) body["queue"] = f.queue;
  auto out = JsonOf(api.Post("/v1/release", body.dump(), "application/json"));
  if (!out) return std::unexpected(out.error());
  const auto& released = (*out)["released"];
  const auto& not_held = (*out)["notHeld"];
  std::cout << released.size() << " job(s) released";
  if (!not_held.empty()) std::cout << ", " << not_held.size() << " not held";
  std::cout << "\n";
  return {};
}

}  // namespace

void RegisterReleaseCommand(CLI::App& app) {
  auto flags = std::make_shared<ReleaseFlags>();
  auto* cmd = app.add_subcommand("release", "Release held jobs so that they are scheduled");
  cmd->add_option("names", flags->names, "Job names");
  cmd->add_option("--queue", flags->queue,
                  "Queue of the jobs (needed only when a name is in several); with --all, "
                  "only that queue");
  cmd->add_flag("--all", flags->all, "Every held job");
  AddClusterFlags(cmd, &flags->cluster);
  cmd->callback([flags] { SetExitCode(RunOrReport([&] { return RunRelease(*flags); })); });
}

}  // namespace tessera::cli
