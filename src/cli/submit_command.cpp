// `tessera submit -f spec.yaml [-f more.yaml]`: sends each job spec (every document of a YAML
// stream; JSON works too) to the controller, which validates and stores it before answering.
// --hold submits them held: Pending (reason Held) until `tessera release`. A relative
// spec.workingDir is taken from the directory `tessera submit` runs in, as sbatch runs a job in
// the directory it was submitted from: the controller only accepts absolute paths.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/live_client.h"
#include "cli/live_commands.h"
#include "spec/document.h"
#include "spec/job_spec.h"

namespace tessera::cli {

namespace {

struct SubmitFlags {
  ClusterFlags cluster;
  std::vector<std::string> files;
  std::string output;
  bool hold = false;
};

int RunSubmit(const SubmitFlags& f) {
  auto format = ParseOutput(f.output);
  if (!format) return PrintError(format.error()), 2;
  auto url = ResolveServer(f.cluster);
  if (!url) return PrintError(url.error()), 2;
  ApiClient api(*url);
  int failures = 0;
  std::error_code ec;
  const std::filesystem::path cwd = std::filesystem::current_path(ec);
  nlohmann::json submitted = nlohmann::json::array();
  for (const auto& file : f.files) {
    std::stringstream ss;
    if (file == "-") {
      ss << std::cin.rdbuf();
    } else {
      std::ifstream in(file, std::ios::binary);
      if (!in) {
        std::fprintf(stderr, "error: %s: cannot read\n", file.c_str());
        ++failures;
        continue;
      }
      ss << in.rdbuf();
    }
    const std::string text = ss.str();
    auto docs = text.find_first_not_of(" \t\r\n") != std::string::npos &&
                        text[text.find_first_not_of(" \t\r\n")] == '{'
                    ? std::vector<std::string>{text}
                    : SplitYamlDocuments(text);
    if (docs.empty()) {
      std::fprintf(stderr, "error: %s: no job spec in the file\n", file.c_str());
      ++failures;
      continue;
    }
    for (std::size_t i = 0; i < docs.size(); ++i) {
      auto job = JsonOf(api.Post(f.hold ? "/v1/jobs?hold=true" : "/v1/jobs",
                                 ec ? docs[i] : WithAbsoluteWorkingDir(docs[i], cwd.string())));
      const std::string where =
          docs.size() > 1 ? file + " (document " + std::to_string(i + 1) + ")" : file;
      if (!job) {
        std::fprintf(stderr, "error: %s: %s\n", where.c_str(), job.error().message.c_str());
        ++failures;
        if (job.error().code == Error::Code::kIo) return 1;  // the controller is unreachable
        continue;
      }
      if (*format == OutputFormat::kTable) {
        std::cout << "job " << job->value("queue", "") << "/" << job->value("name", "")
                  << " submitted (" << job->value("kind", "") << ", " << job->value("tasks", 0)
                  << " task(s), " << Number(job->value("gpus", 0.0)) << " GPU(s))"
                  << (f.hold ? ", held" : "") << "\n";
      } else {
        submitted.push_back(*job);
      }
    }
  }
  if (*format != OutputFormat::kTable) PrintStructured(submitted, *format);
  return failures == 0 ? 0 : 1;
}

}  // namespace

void RegisterSubmitCommand(CLI::App& app) {
  auto flags = std::make_shared<SubmitFlags>();
  auto* cmd = app.add_subcommand("submit", "Submit job specs (YAML or JSON) to the cluster");
  cmd->add_option("-f,--file", flags->files, "Spec file ('-' for standard input); repeatable")
      ->required();
  cmd->add_flag("--hold", flags->hold,
                "Submit held: pending, not scheduled until `tessera release`");
  AddClusterFlags(cmd, &flags->cluster);
  AddOutputFlag(cmd, &flags->output);
  cmd->callback([flags] { SetExitCode(RunSubmit(*flags)); });
}

}  // namespace tessera::cli
