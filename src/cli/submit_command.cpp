// `tessera submit -f spec.yaml [-f more.yaml]`: sends each job spec (every document of a YAML
// stream; JSON works too) to the controller, which validates and stores it before answering.
// --hold submits them held: Pending (reason Held) until `tessera release`. A relative
// spec.workingDir is taken from the directory `tessera submit` runs in, as sbatch runs a job in
// the directory it was submitted from: the controller only accepts absolute paths.
// A document that is a list (a YAML sequence or JSON array, as `tessera get jobs -o yaml`
// prints) submits each of its objects. A job that can never fit the registered nodes is
// refused with the reason (as sbatch refuses one), unless --queue-anyway.
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
  bool queue_anyway = false;
};

// The job documents of a file's text: YAML documents (or one JSON document), each list
// among them split into its objects. A document that does not parse is kept as it is, for
// the controller to report with its line and column.
std::vector<std::string> JobDocuments(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  const bool json = text[first] == '{' || text[first] == '[';
  std::vector<std::string> out;
  for (const auto& doc : json ? std::vector<std::string>{text} : SplitYamlDocuments(text)) {
    auto parsed = ParseDocument(doc);
    if (parsed && parsed->is_array()) {
      for (const auto& item : *parsed) out.push_back(DumpJson(item));
    } else {
      out.push_back(doc);
    }
  }
  return out;
}

std::string SubmitPath(const SubmitFlags& f) {
  std::string path = "/v1/jobs";
  if (f.hold) path += "?hold=true";
  if (f.queue_anyway) path += f.hold ? "&queueAnyway=true" : "?queueAnyway=true";
  return path;
}

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
    const auto docs = JobDocuments(ss.str());
    if (docs.empty()) {
      std::fprintf(stderr, "error: %s: no job spec in the file\n", file.c_str());
      ++failures;
      continue;
    }
    for (std::size_t i = 0; i < docs.size(); ++i) {
      auto job = JsonOf(
          api.Post(SubmitPath(f), ec ? docs[i] : WithAbsoluteWorkingDir(docs[i], cwd.string())));
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
                  << (f.hold ? ", held" : "") << (f.queue_anyway ? ", queued anyway" : "") << "\n";
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
  cmd->add_flag("--queue-anyway", flags->queue_anyway,
                "Queue a job that can never fit the registered nodes (e.g. until bigger ones "
                "register) instead of refusing it");
  AddClusterFlags(cmd, &flags->cluster);
  AddOutputFlag(cmd, &flags->output);
  cmd->callback([flags] { SetExitCode(RunSubmit(*flags)); });
}

}  // namespace tessera::cli
