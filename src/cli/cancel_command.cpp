// `tessera cancel NAME`: pending parts of the job end at once; every running process is sent
// SIGTERM, then SIGKILL after the job's grace period. --wait returns once all have stopped.
#include <iostream>
#include <thread>

#include "cli/commands.h"
#include "cli/live_client.h"
#include "cli/live_commands.h"

namespace tessera::cli {

namespace {

struct CancelFlags {
  ClusterFlags cluster;
  std::string name;
  std::string queue;
  bool wait = false;
  bool purge = false;
  double timeout = 300;
};

Status RunCancel(const CancelFlags& f) {
  auto url = ResolveServer(f.cluster);
  if (!url) return std::unexpected(url.error());
  ApiClient api(*url);
  auto queue = ResolveJobQueue(api, f.name, f.queue);
  if (!queue) return std::unexpected(queue.error());
  const std::string path = "/v1/jobs/" + PathOf(*queue, f.name);
  auto job = JsonOf(api.Delete(path));
  if (!job) return std::unexpected(job.error());
  std::cout << "job " << *queue << "/" << f.name << ": " << job->value("phase", "") << "\n";
  if (f.wait || f.purge) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(static_cast<long>(f.timeout * 1000));
    while (job->value("finishTimeMs", std::int64_t{0}) == 0) {
      if (std::chrono::steady_clock::now() > deadline)
        return FailedPrecondition("the job did not stop within the timeout");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      job = JsonOf(api.Get(path));
      if (!job) return std::unexpected(job.error());
    }
    std::cout << "job " << *queue << "/" << f.name << ": " << job->value("phase", "") << "\n";
  }
  if (f.purge) {
    auto purged = JsonOf(api.Delete(path + "?purge=true"));
    if (!purged) return std::unexpected(purged.error());
    std::cout << "job " << *queue << "/" << f.name << ": records deleted\n";
  }
  return {};
}

}  // namespace

void RegisterCancelCommand(CLI::App& app) {
  auto flags = std::make_shared<CancelFlags>();
  auto* cmd = app.add_subcommand("cancel", "Cancel a job: stop every process it runs");
  cmd->add_option("name", flags->name, "Job name")->required();
  cmd->add_option("--queue", flags->queue,
                  "Queue of the job (needed only when the name is in several)");
  cmd->add_flag("--wait", flags->wait, "Return once every task has stopped");
  cmd->add_flag("--purge", flags->purge,
                "Then delete the job's records (frees its name); implies --wait");
  cmd->add_option("--timeout", flags->timeout, "Seconds --wait waits")->capture_default_str();
  AddClusterFlags(cmd, &flags->cluster);
  cmd->callback([flags] { SetExitCode(RunOrReport([&] { return RunCancel(*flags); })); });
}

}  // namespace tessera::cli
