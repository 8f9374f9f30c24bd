// `tessera logs NAME [--rank N] [-f]`: the stdout and stderr of one task (rank 0 of the latest
// attempt by default), fetched through the controller from the agent that ran it. With -f it
// keeps printing until the task ends.
#include <unistd.h>

#include <iostream>
#include <thread>

#include "cli/commands.h"
#include "cli/live_client.h"
#include "cli/live_commands.h"

namespace tessera::cli {

namespace {

struct LogsFlags {
  ClusterFlags cluster;
  std::string name;
  std::string queue;
  int rank = 0;
  int attempt = 0;
  bool follow = false;
};

Status RunLogs(const LogsFlags& f) {
  auto url = ResolveServer(f.cluster);
  if (!url) return std::unexpected(url.error());
  ApiClient api(*url);
  auto queue = ResolveJobQueue(api, f.name, f.queue);
  if (!queue) return std::unexpected(queue.error());
  std::int64_t offset = 0;
  std::string task_id;
  while (true) {
    const std::string path =
        "/v1/logs/" + PathOf(*queue, f.name) + "?rank=" + std::to_string(f.rank) +
        "&attempt=" + std::to_string(f.attempt) + "&offset=" + std::to_string(offset);
    auto res = api.Get(path);
    if (!res) return std::unexpected(res.error());
    if (res->status == 404 && f.follow && res->headers.contains("X-Tessera-Task-Id") &&
        res->headers.at("X-Tessera-Task-State") == "Assigned") {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // not started yet
      continue;
    }
    if (res->status == 404 && f.follow && !res->headers.contains("X-Tessera-Task-Id")) {
      // No task of that rank yet: the job is still pending.
      auto job = JsonOf(api.Get("/v1/jobs/" + PathOf(*queue, f.name)));
      if (!job) return std::unexpected(job.error());
      if (job->value("finishTimeMs", std::int64_t{0}) != 0)
        return NotFound("the job ended before rank " + std::to_string(f.rank) + " started");
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      continue;
    }
    if (res->status != 200) {
      auto err = JsonOf(res);
      if (!err) return std::unexpected(err.error());
      return Internal("HTTP " + std::to_string(res->status));
    }
    const std::string id =
        res->headers.contains("X-Tessera-Task-Id") ? res->headers.at("X-Tessera-Task-Id") : "";
    if (!task_id.empty() && id != task_id) {
      std::cout << "--- a new attempt started (task " << id << ") ---\n";
      offset = 0;
      task_id = id;
      continue;
    }
    task_id = id;
    if (!res->body.empty()) {
      std::cout.write(res->body.data(), static_cast<std::streamsize>(res->body.size()));
      std::cout.flush();
    }
    if (res->headers.contains("X-Tessera-Offset")) {
      offset = std::stoll(res->headers.at("X-Tessera-Offset"));
    } else {
      offset += static_cast<std::int64_t>(res->body.size());
    }
    if (!f.follow) return {};
    const std::string state = res->headers.contains("X-Tessera-Task-State")
                                  ? res->headers.at("X-Tessera-Task-State")
                                  : "";
    const bool live = state == "Assigned" || state == "Running" || state == "Stopping";
    if (!live && res->body.empty()) return {};
    if (res->body.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

}  // namespace

void RegisterLogsCommand(CLI::App& app) {
  auto flags = std::make_shared<LogsFlags>();
  auto* cmd = app.add_subcommand("logs", "Print the output of one task of a job");
  cmd->add_option("name", flags->name, "Job name")->required();
  cmd->add_option("--rank", flags->rank, "Task rank (TASK_INDEX for a BatchJob)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--attempt", flags->attempt, "Attempt (default: the latest)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--queue", flags->queue,
                  "Queue of the job (needed only when the name is in several)");
  cmd->add_flag("-f,--follow", flags->follow, "Keep printing until the task ends");
  AddClusterFlags(cmd, &flags->cluster);
  cmd->callback([flags] { SetExitCode(RunOrReport([&] { return RunLogs(*flags); })); });
}

}  // namespace tessera::cli
