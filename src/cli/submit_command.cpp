// `tessera submit -f spec.yaml [-f more.yaml]`: sends each job spec (every document of a YAML
// stream; JSON works too) to the controller, which validates and stores it before answering.
// Specs users already have are translated first (spec/imported_spec.h): Kubeflow PyTorchJob
// and TrainJob, Volcano Job and Kubernetes Job documents with -f, Slurm batch scripts with
// --sbatch; what became of each field is printed to standard error, and a field that cannot be
// honoured refuses the document. PriorityClass documents give priority class values to the
// documents of the same files. --hold submits held: Pending (reason Held) until `tessera
// release`. --dry-run prints the Tessera specs instead of submitting them. A relative
// spec.workingDir is taken from the directory `tessera submit` runs in, as sbatch runs a job in
// the directory it was submitted from: the controller only accepts absolute paths.
// A document that is a list (a YAML sequence or JSON array, as `tessera get jobs -o yaml`
// prints) submits each of its objects. A job that can never fit the registered nodes is
// refused with the reason (as sbatch refuses one), unless --queue-anyway.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/live_client.h"
#include "cli/live_commands.h"
#include "spec/document.h"
#include "spec/imported_spec.h"
#include "spec/job_spec.h"
#include "spec/submission_body.h"

extern char** environ;

namespace tessera::cli {

namespace {

struct SubmitFlags {
  ClusterFlags cluster;
  std::vector<std::string> files;
  std::vector<std::string> sbatch;
  std::vector<std::string> priority_classes;  // NAME=VALUE
  std::string output;
  bool hold = false;
  bool queue_anyway = false;
  bool dry_run = false;
};

// One job to submit: the body to send, where it came from, and whether it goes in held.
struct Submission {
  std::string where;  // "file", "file (document 2)"
  std::string body;
  bool hold = false;
};

Result<std::string> ReadInput(const std::string& file) {
  std::stringstream ss;
  if (file == "-") {
    ss << std::cin.rdbuf();
  } else {
    std::ifstream in(file, std::ios::binary);
    if (!in) return IoError(file + ": cannot read");
    ss << in.rdbuf();
  }
  return ss.str();
}

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

std::string SubmitPath(bool hold, bool queue_anyway) {
  std::string path = "/v1/jobs";
  if (hold) path += "?hold=true";
  if (queue_anyway) path += hold ? "&queueAnyway=true" : "?queueAnyway=true";
  return path;
}

void PrintNotes(const std::string& where, const ImportedJob& job) {
  const auto& meta = job.document["metadata"];
  std::fprintf(stderr, "%s: %s -> %s %s/%s\n", where.c_str(), job.source.c_str(),
               job.document["kind"].get<std::string>().c_str(),
               meta.value("queue", "default").c_str(), meta.value("name", "").c_str());
  for (const auto& n : job.notes) std::fprintf(stderr, "  %s\n", n.ToString().c_str());
}

ImportOptions BaseOptions(const SubmitFlags& f, const std::string& cwd, int* failures) {
  ImportOptions options;
  options.submit_dir = cwd;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq != std::string::npos) options.submit_env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& pc : f.priority_classes) {
    const auto eq = pc.find('=');
    try {
      if (eq == std::string::npos || eq == 0) throw std::invalid_argument(pc);
      std::size_t used = 0;
      const int v = std::stoi(pc.substr(eq + 1), &used);
      if (used != pc.size() - eq - 1 || v < -kMaxPriority || v > kMaxPriority) {
        throw std::invalid_argument(pc);
      }
      options.priority_classes[pc.substr(0, eq)] = v;
    } catch (const std::exception&) {
      std::fprintf(stderr,
                   "error: --priority-class %s: expected NAME=VALUE, VALUE between %d "
                   "and %d\n",
                   pc.c_str(), -kMaxPriority, kMaxPriority);
      ++*failures;
    }
  }
  return options;
}

// Reads every file; translates imported documents; collects what to submit. Problems are
// printed and counted in `failures`.
std::vector<Submission> Prepare(const SubmitFlags& f, const std::string& cwd, int* failures) {
  ImportOptions options = BaseOptions(f, cwd, failures);
  struct Doc {
    std::string where, text;
    nlohmann::json tree;  // null when it did not parse (the controller reports why)
  };
  std::vector<Doc> docs;
  for (const auto& file : f.files) {
    auto text = ReadInput(file);
    if (!text) {
      std::fprintf(stderr, "error: %s\n", text.error().message.c_str());
      ++*failures;
      continue;
    }
    const auto parts = JobDocuments(*text);
    if (parts.empty()) {
      std::fprintf(stderr, "error: %s: no job spec in the file\n", file.c_str());
      ++*failures;
    }
    for (std::size_t i = 0; i < parts.size(); ++i) {
      auto tree = ParseDocument(parts[i]);
      docs.push_back({parts.size() > 1 ? file + " (document " + std::to_string(i + 1) + ")" : file,
                      parts[i], tree ? *tree : nlohmann::json()});
    }
  }
  // PriorityClasses first, so that a job may come before the class it names.
  std::vector<bool> is_class(docs.size(), false);
  for (std::size_t i = 0; i < docs.size(); ++i) {
    auto pc = ReadPriorityClass(docs[i].tree, options);
    if (!pc) {
      std::fprintf(stderr, "error: %s: %s\n", docs[i].where.c_str(), pc.error().message.c_str());
      ++*failures;
      is_class[i] = true;
    } else {
      is_class[i] = *pc;
    }
  }
  std::vector<Submission> out;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    if (is_class[i]) continue;
    if (!IsImportedJobDocument(docs[i].tree)) {
      out.push_back({docs[i].where, SubmissionBody(docs[i].text, cwd), f.hold});
      continue;
    }
    auto job = ImportJobDocument(docs[i].tree, options);
    if (!job) {
      std::fprintf(stderr, "error: %s: %s\n", docs[i].where.c_str(), job.error().message.c_str());
      ++*failures;
      continue;
    }
    PrintNotes(docs[i].where, *job);
    out.push_back({docs[i].where, DumpJson(job->document), f.hold || job->hold});
  }
  for (const auto& file : f.sbatch) {
    auto text = ReadInput(file);
    if (!text) {
      std::fprintf(stderr, "error: %s\n", text.error().message.c_str());
      ++*failures;
      continue;
    }
    options.script_name = std::filesystem::path(file).filename().string();
    auto job = ImportSbatchScript(*text, options);
    if (!job) {
      std::fprintf(stderr, "error: %s: %s\n", file.c_str(), job.error().message.c_str());
      ++*failures;
      continue;
    }
    PrintNotes(file, *job);
    out.push_back({file, DumpJson(job->document), f.hold || job->hold});
  }
  return out;
}

// --dry-run: the Tessera spec of each submission, validated here.
int PrintDryRun(const std::vector<Submission>& subs, OutputFormat format, int failures) {
  nlohmann::json specs = nlohmann::json::array();
  for (const auto& s : subs) {
    auto spec = ParseJobSpec(s.body);
    if (!spec) {
      std::fprintf(stderr, "error: %s: %s\n", s.where.c_str(), spec.error().message.c_str());
      ++failures;
      continue;
    }
    specs.push_back(JobSpecToJson(*spec));
  }
  if (format == OutputFormat::kJson) {
    PrintStructured(specs, format);
  } else {
    for (const auto& s : specs) std::cout << "---\n" << ToYaml(s);
  }
  return failures == 0 ? 0 : 1;
}

int RunSubmit(const SubmitFlags& f) {
  auto format = ParseOutput(f.output);
  if (!format) return PrintError(format.error()), 2;
  if (f.files.empty() && f.sbatch.empty()) {
    std::fprintf(stderr,
                 "error: give job specs with -f FILE or batch scripts with --sbatch FILE\n");
    return 2;
  }
  std::error_code ec;
  const std::filesystem::path cwd = std::filesystem::current_path(ec);
  int failures = 0;
  const auto subs = Prepare(f, ec ? std::string() : cwd.string(), &failures);
  if (f.dry_run) return PrintDryRun(subs, *format, failures);
  auto url = ResolveServer(f.cluster);
  if (!url) return PrintError(url.error()), 2;
  ApiClient api(*url);
  nlohmann::json submitted = nlohmann::json::array();
  for (const auto& s : subs) {
    auto job = JsonOf(api.Post(SubmitPath(s.hold, f.queue_anyway), s.body));
    if (!job) {
      std::fprintf(stderr, "error: %s: %s\n", s.where.c_str(), job.error().message.c_str());
      ++failures;
      if (job.error().code == Error::Code::kIo) return 1;  // the controller is unreachable
      continue;
    }
    if (*format == OutputFormat::kTable) {
      std::cout << "job " << job->value("queue", "") << "/" << job->value("name", "")
                << " submitted (" << job->value("kind", "") << ", " << job->value("tasks", 0)
                << " task(s), " << Number(job->value("gpus", 0.0)) << " GPU(s))"
                << (s.hold ? ", held" : "") << (f.queue_anyway ? ", queued anyway" : "") << "\n";
    } else {
      submitted.push_back(*job);
    }
  }
  if (*format != OutputFormat::kTable) PrintStructured(submitted, *format);
  return failures == 0 ? 0 : 1;
}

}  // namespace

void RegisterSubmitCommand(CLI::App& app) {
  auto flags = std::make_shared<SubmitFlags>();
  auto* cmd = app.add_subcommand(
      "submit",
      "Submit job specs (Tessera YAML or JSON; Kubeflow PyTorchJob/TrainJob, Volcano Job and "
      "Kubernetes Job are translated) or Slurm batch scripts to the cluster");
  cmd->add_option("-f,--file", flags->files, "Spec file ('-' for standard input); repeatable");
  cmd->add_option("--sbatch", flags->sbatch,
                  "Slurm batch script: #SBATCH lines give the allocation, the script runs on "
                  "its first node; repeatable");
  cmd->add_option("--priority-class", flags->priority_classes,
                  "NAME=VALUE: the priority of a Kubernetes priority class; repeatable");
  cmd->add_flag("--hold", flags->hold,
                "Submit held: pending, not scheduled until `tessera release`");
  cmd->add_flag("--queue-anyway", flags->queue_anyway,
                "Queue a job that can never fit the registered nodes (e.g. until bigger ones "
                "register) instead of refusing it");
  cmd->add_flag("--dry-run", flags->dry_run,
                "Translate and validate here, print the Tessera specs, submit nothing");
  AddClusterFlags(cmd, &flags->cluster);
  AddOutputFlag(cmd, &flags->output);
  cmd->callback([flags] { SetExitCode(RunSubmit(*flags)); });
}

}  // namespace tessera::cli
