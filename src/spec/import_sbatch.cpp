// A Slurm batch script -> TrainingJob (or, with --array, BatchJob). The #SBATCH lines before
// the first command give the allocation: N nodes with G GPUs each become N workers of G GPUs.
// As sbatch does, the script itself runs once, on the first node (rank 0), with Slurm's
// variables; the other workers hold their nodes' GPUs until it ends (successPolicy Rank0), and
// the script starts ranks there itself (torchrun with MASTER_ADDR/MASTER_PORT).
#include <algorithm>
#include <cctype>

#include "spec/import_translation.h"
#include "core/slurm_time.h"
#include "spec/text.h"

namespace tessera {

namespace {

using namespace import;

// One option of an #SBATCH line, by its long name.
struct Option {
  std::string name;
  std::string value;
  std::string field;  // "--time (line 3)"
};

enum class Arity { kValue, kFlag };

// sbatch's options that this importer knows, by long name, with their short letters.
struct OptionInfo {
  char letter;
  Arity arity;
};
const std::map<std::string, OptionInfo>& KnownOptions() {
  static const std::map<std::string, OptionInfo> kOptions = {
      {"nodes", {'N', Arity::kValue}},       {"ntasks-per-node", {0, Arity::kValue}},
      {"ntasks", {'n', Arity::kValue}},      {"gpus-per-node", {0, Arity::kValue}},
      {"gres", {0, Arity::kValue}},          {"gpus", {'G', Arity::kValue}},
      {"gpus-per-task", {0, Arity::kValue}}, {"cpus-per-task", {'c', Arity::kValue}},
      {"mem", {0, Arity::kValue}},           {"mem-per-gpu", {0, Arity::kValue}},
      {"mem-per-cpu", {0, Arity::kValue}},   {"time", {'t', Arity::kValue}},
      {"job-name", {'J', Arity::kValue}},    {"partition", {'p', Arity::kValue}},
      {"array", {'a', Arity::kValue}},       {"dependency", {'d', Arity::kValue}},
      {"chdir", {'D', Arity::kValue}},       {"hold", {'H', Arity::kFlag}},
      {"requeue", {0, Arity::kFlag}},        {"no-requeue", {0, Arity::kFlag}},
      {"priority", {0, Arity::kValue}},      {"export", {0, Arity::kValue}},
      {"output", {'o', Arity::kValue}},      {"error", {'e', Arity::kValue}},
      {"open-mode", {0, Arity::kValue}},     {"mail-type", {0, Arity::kValue}},
      {"mail-user", {0, Arity::kValue}},     {"account", {'A', Arity::kValue}},
      {"exclusive", {0, Arity::kFlag}},      {"qos", {'q', Arity::kValue}},
      {"comment", {0, Arity::kValue}},       {"wckey", {0, Arity::kValue}},
      {"signal", {0, Arity::kValue}},        {"threads-per-core", {0, Arity::kValue}},
      {"hint", {0, Arity::kValue}},          {"distribution", {'m', Arity::kValue}},
      {"gpu-bind", {0, Arity::kValue}},      {"cpu-bind", {0, Arity::kValue}},
      {"verbose", {'v', Arity::kFlag}},      {"quiet", {'Q', Arity::kFlag}},
      {"parsable", {0, Arity::kFlag}},       {"kill-on-invalid-dep", {0, Arity::kValue}},
      {"nodelist", {'w', Arity::kValue}},    {"exclude", {'x', Arity::kValue}},
      {"constraint", {'C', Arity::kValue}},  {"begin", {'b', Arity::kValue}},
      {"deadline", {0, Arity::kValue}},      {"reservation", {0, Arity::kValue}},
      {"licenses", {'L', Arity::kValue}},    {"wait", {'W', Arity::kFlag}},
      {"input", {'i', Arity::kValue}},       {"test-only", {0, Arity::kFlag}},
      {"time-min", {0, Arity::kValue}},      {"switches", {0, Arity::kValue}},
  };
  return kOptions;
}

// Options with no effect on where or how the script runs here, and why.
const std::map<std::string, std::string>& IgnoredOptions() {
  static const std::map<std::string, std::string> kIgnored = {
      {"output", "the agent keeps each task's log: `tessera logs NAME`"},
      {"error", "the agent keeps each task's log: `tessera logs NAME`"},
      {"open-mode", "the agent keeps each task's log"},
      {"mail-type", "no mail is sent; `tessera events` and `tessera get jobs` show the state"},
      {"mail-user", "no mail is sent"},
      {"account", "no accounting; the queue comes from --partition"},
      {"exclusive", "nodes are shared by GPU: other jobs may use the node's other GPUs"},
      {"qos", "priority comes from --priority and the queue"},
      {"comment", "not kept"},
      {"wckey", "no accounting"},
      {"signal",
       "at the time limit the script gets SIGTERM, then SIGKILL after "
       "spec.gracePeriodSeconds (30 s)"},
      {"threads-per-core", "tasks are processes on the node; no CPU binding"},
      {"hint", "no CPU binding"},
      {"distribution", "the script starts its ranks itself"},
      {"gpu-bind", "CUDA_VISIBLE_DEVICES lists the job's GPUs on each node"},
      {"cpu-bind", "no CPU binding"},
      {"verbose", "sbatch's own output"},
      {"quiet", "sbatch's own output"},
      {"parsable", "sbatch's own output"},
      {"kill-on-invalid-dep",
       "a job whose afterok dependency failed fails at once "
       "(reason DependencyNeverSatisfied)"},
      {"time-min", "the job runs to --time"},
  };
  return kIgnored;
}

const std::map<std::string, std::string>& RefusedOptions() {
  static const std::map<std::string, std::string> kRefused = {
      {"nodelist", "jobs cannot name nodes; Tessera places them"},
      {"exclude", "jobs cannot exclude nodes; Tessera places them"},
      {"constraint", "node features are not known; give the GPU type: --gpus-per-node=TYPE:N"},
      {"begin", "delayed starts are not supported; submit it later or with --hold"},
      {"deadline", "deadlines are not supported"},
      {"reservation", "reservations are not supported"},
      {"licenses", "licenses are not supported"},
      {"wait", "use `tessera logs NAME -f` to wait for the job"},
      {"input", "tasks have no standard input"},
      {"test-only", "use `tessera sim` to try a schedule"},
      {"switches", "give placement in a Tessera spec: spec.topology"},
  };
  return kRefused;
}

// Splits the text after "#SBATCH" into words ('...' and "..." quote); a word starting with '#'
// ends the line.
std::vector<std::string> Words(std::string_view line) {
  std::vector<std::string> words;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i >= line.size() || line[i] == '#') break;
    std::string w;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) {
      if (line[i] == '"' || line[i] == '\'') {
        const char q = line[i++];
        while (i < line.size() && line[i] != q) w += line[i++];
        if (i < line.size()) ++i;
      } else {
        w += line[i++];
      }
    }
    words.push_back(std::move(w));
  }
  return words;
}

// The #SBATCH options of `text`, read as sbatch reads them: up to the first line that is
// neither blank nor a comment.
std::vector<Option> ReadOptions(std::string_view text, Translation& t) {
  std::vector<Option> options;
  int line_no = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos) continue;
    if (line[first] != '#') break;  // the first command: sbatch reads no further
    if (!line.starts_with("#SBATCH")) continue;
    const auto words = Words(line.substr(7));
    const std::string where = " (line " + std::to_string(line_no) + ")";
    for (std::size_t i = 0; i < words.size(); ++i) {
      const std::string& w = words[i];
      std::string name, value;
      bool has_value = false;
      if (w.starts_with("--")) {
        const auto eq = w.find('=');
        name = w.substr(2, eq == std::string::npos ? eq : eq - 2);
        if (eq != std::string::npos) {
          value = w.substr(eq + 1);
          has_value = true;
        }
      } else if (w.size() >= 2 && w[0] == '-') {
        for (const auto& [long_name, info] : KnownOptions()) {
          if (info.letter == w[1]) name = long_name;
        }
        if (name.empty()) {
          t.Refuse(w + where, "unknown option");
          continue;
        }
        if (w.size() > 2) {
          value = w.substr(w[2] == '=' ? 3 : 2);
          has_value = true;
        }
      } else {
        t.Refuse(w + where, "not an option (#SBATCH lines hold sbatch options only)");
        continue;
      }
      auto known = KnownOptions().find(name);
      if (known == KnownOptions().end()) {
        t.Refuse("--" + name + where,
                 "not supported (docs/imported-specs.md lists the #SBATCH "
                 "options Tessera reads)");
        continue;
      }
      if (known->second.arity == Arity::kValue && !has_value) {
        if (i + 1 >= words.size()) {
          t.Refuse("--" + name + where, "needs a value");
          continue;
        }
        value = words[++i];
      }
      options.push_back({name, value, "--" + name + where});
    }
  }
  return options;
}

// A Slurm job name as a Tessera name: lower case, other characters as '-'.
std::string TesseraName(std::string_view name) {
  std::string out;
  for (char c : name) {
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const bool keep = (l >= 'a' && l <= 'z') || (l >= '0' && l <= '9');
    if (keep) {
      out += l;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  if (out.size() > kMaxNameLength) out.resize(kMaxNameLength);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "sbatch" : out;
}

std::optional<std::int64_t> Count(const Option& o, std::int64_t lo, std::int64_t hi,
                                  Translation& t) {
  try {
    std::size_t used = 0;
    const long long v = std::stoll(o.value, &used);
    if (used == o.value.size() && v >= lo && v <= hi) return v;
  } catch (const std::exception&) {
  }
  t.Refuse(o.field, "must be a whole number between " + std::to_string(lo) + " and " +
                        std::to_string(hi) + ", got " + Quote(o.value));
  return std::nullopt;
}

// "[TYPE:]N" (--gpus-per-node, --gpus): the count and the type, if any.
std::optional<std::pair<std::int64_t, std::string>> TypedCount(const Option& o, Translation& t) {
  const auto colon = o.value.rfind(':');
  Option n = o;
  n.value = colon == std::string::npos ? o.value : o.value.substr(colon + 1);
  auto c = Count(n, 0, kMaxGpusPerTask * std::int64_t{kMaxTasksPerJob}, t);
  if (!c) return std::nullopt;
  return std::pair{*c, colon == std::string::npos ? "" : o.value.substr(0, colon)};
}

// Slurm sizes: a number with K, M (the default), G or T -> MiB.
std::optional<std::int64_t> SizeMib(const Option& o, Translation& t) {
  std::string digits = o.value;
  std::int64_t factor_kib = 1024;  // M
  if (!digits.empty() && std::isalpha(static_cast<unsigned char>(digits.back()))) {
    const char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(digits.back())));
    digits.pop_back();
    factor_kib = unit == 'K'   ? 1
                 : unit == 'M' ? 1024
                 : unit == 'G' ? 1024 * 1024
                 : unit == 'T' ? std::int64_t{1024} * 1024 * 1024
                               : -1;
  }
  Option n = o;
  n.value = digits;
  auto v = factor_kib < 0 ? std::nullopt : Count(n, 0, std::int64_t{1} << 40, t);
  if (!v) {
    if (factor_kib < 0) t.Refuse(o.field, "must be a size such as 64G or 16000M, got " + o.value);
    return std::nullopt;
  }
  return (*v * factor_kib + 1023) / 1024;
}

// --array=0-15, 1,3,5, 0-15:4, with %N for at most N at once: the array's task ids.
std::optional<std::vector<std::int64_t>> ArrayIds(const Option& o, int* max_running,
                                                  Translation& t) {
  std::string spec = o.value;
  if (const auto pct = spec.find('%'); pct != std::string::npos) {
    Option n = o;
    n.value = spec.substr(pct + 1);
    auto m = Count(n, 1, kMaxTasksPerJob, t);
    if (!m) return std::nullopt;
    *max_running = static_cast<int>(*m);
    spec.resize(pct);
  }
  std::vector<std::int64_t> ids;
  std::size_t start = 0;
  while (start <= spec.size()) {
    const std::size_t comma = std::min(spec.find(',', start), spec.size());
    std::string part = spec.substr(start, comma - start);
    start = comma + 1;
    std::int64_t step = 1;
    if (const auto colon = part.find(':'); colon != std::string::npos) {
      Option n = o;
      n.value = part.substr(colon + 1);
      auto s = Count(n, 1, 4'000'000, t);
      if (!s) return std::nullopt;
      step = *s;
      part.resize(colon);
    }
    const auto dash = part.find('-');
    Option lo = o, hi = o;
    lo.value = part.substr(0, dash);
    hi.value = dash == std::string::npos ? lo.value : part.substr(dash + 1);
    auto a = Count(lo, 0, 4'000'000, t), b = Count(hi, 0, 4'000'000, t);
    if (!a || !b) return std::nullopt;
    for (std::int64_t i = *a; i <= *b; i += step) {
      ids.push_back(i);
      if (ids.size() > static_cast<std::size_t>(kMaxTasksPerJob)) {
        t.Refuse(o.field, "more than " + std::to_string(kMaxTasksPerJob) + " array tasks");
        return std::nullopt;
      }
    }
  }
  if (ids.empty()) {
    t.Refuse(o.field, "names no array task");
    return std::nullopt;
  }
  return ids;
}

// --dependency=afterok:a[:b],afterany:c -> spec.dependencies.
Json Dependencies(const Option& o, Translation& t) {
  Json deps = Json::array();
  if (o.value.find('?') != std::string::npos) {
    t.Refuse(o.field, "'?' (any of the dependencies) is not supported; all must be met (',')");
    return deps;
  }
  std::size_t start = 0;
  while (start <= o.value.size()) {
    const std::size_t comma = std::min(o.value.find(',', start), o.value.size());
    const std::string part = o.value.substr(start, comma - start);
    start = comma + 1;
    const auto colon = part.find(':');
    const std::string type = part.substr(0, colon);
    if (type != "afterok" && type != "afterany") {
      t.Refuse(o.field,
               "dependency type " + Quote(type) + " is not supported (afterok and afterany are)");
      continue;
    }
    if (colon == std::string::npos) {
      t.Refuse(o.field, type + " needs a job: " + type + ":NAME");
      continue;
    }
    std::size_t at = colon + 1;
    while (at <= part.size()) {
      const std::size_t next = std::min(part.find(':', at), part.size());
      const std::string job = part.substr(at, next - at);
      at = next + 1;
      if (job.find('+') != std::string::npos) {
        t.Refuse(o.field, "'+minutes' after a job is not supported");
        continue;
      }
      deps.push_back({{"type", type}, {"job", job}});
    }
  }
  t.Map(o.field, "-> spec.dependencies (jobs by Tessera name, or QUEUE/NAME)");
  return deps;
}

// What the allocation looks like once every option is read.
struct Allocation {
  std::int64_t nodes = 1;
  std::optional<std::int64_t> tasks_per_node, ntasks, cpus_per_task;
  std::optional<std::int64_t> gpus_per_node;
  std::string gpu_type;
  std::optional<std::int64_t> mem_mib, mem_per_gpu_mib, mem_per_cpu_mib;
  std::optional<std::vector<std::int64_t>> array;
  int array_max_running = 0;
  std::optional<std::int64_t> time_seconds;
};

// The GPUs per node one option asks for; they must agree where several are given.
void SetGpus(Allocation& a, std::int64_t per_node, const std::string& type, const Option& o,
             Translation& t) {
  if (a.gpus_per_node && *a.gpus_per_node != per_node) {
    t.Refuse(o.field, "asks for " + std::to_string(per_node) +
                          " GPUs per node, another option "
                          "for " +
                          std::to_string(*a.gpus_per_node));
    return;
  }
  a.gpus_per_node = per_node;
  if (!type.empty()) a.gpu_type = type;
  t.Map(o.field, "-> gpusPerWorker = " + std::to_string(per_node) +
                     (type.empty() ? "" : ", gpuModels [" + type + "]"));
}

// The launcher run on every worker: rank 0 writes the script out and runs it; the others hold
// their GPUs until the job ends.
std::string Launcher(const Allocation& a) {
  std::string sh;
  if (a.nodes > 1) sh += "if [ \"$NODE_RANK\" != 0 ]; then exec sleep infinity; fi\n";
  sh +=
      "export SLURM_JOB_ID=\"$TESSERA_TASK_ID\" SLURM_JOBID=\"$TESSERA_TASK_ID\" SLURM_NODEID=0 "
      "SLURM_PROCID=0 SLURM_LOCALID=0 SLURMD_NODENAME=\"$TESSERA_NODE\" "
      "SLURM_JOB_NODELIST=\"${TESSERA_NODES:-$TESSERA_NODE}\" "
      "SLURM_NODELIST=\"${TESSERA_NODES:-$TESSERA_NODE}\"\n";
  if (a.array) {
    const auto& ids = *a.array;
    bool arithmetic = true;
    const std::int64_t step = ids.size() > 1 ? ids[1] - ids[0] : 1;
    for (std::size_t i = 1; i < ids.size(); ++i) arithmetic &= ids[i] - ids[i - 1] == step;
    if (arithmetic) {
      sh += "SLURM_ARRAY_TASK_ID=$((" + std::to_string(ids.front()) + " + TASK_INDEX * " +
            std::to_string(step) + "))\n";
    } else {
      sh += "set --";
      for (auto id : ids) sh += " " + std::to_string(id);
      sh += "\nshift \"$TASK_INDEX\"\nSLURM_ARRAY_TASK_ID=\"$1\"\n";
    }
    sh += "export SLURM_ARRAY_TASK_ID SLURM_ARRAY_JOB_ID=\"$TESSERA_JOB\"\n";
  }
  sh +=
      "script=\"${TMPDIR:-/tmp}/tessera-sbatch.$TESSERA_TASK_ID.$$\"\n"
      "printf '%s' \"$TESSERA_BATCH_SCRIPT\" > \"$script\" && chmod 700 \"$script\" || exit 1\n"
      "unset TESSERA_BATCH_SCRIPT\n"
      "\"$script\"\nstatus=$?\nrm -f \"$script\"\nexit $status\n";
  return sh;
}

}  // namespace

Result<ImportedJob> ImportSbatchScript(std::string_view text, const ImportOptions& options) {
  Translation t("Slurm batch script");
  if (!text.starts_with("#!")) {
    t.Refuse("line 1", "a batch script starts with #! and the interpreter, as sbatch requires");
    return t.Finish({}, false);
  }
  if (text.size() > kMaxArgBytes) {
    t.Refuse("script", "is " + std::to_string(text.size()) + " bytes; at most " +
                           std::to_string(kMaxArgBytes) + " are carried in the spec");
    return t.Finish({}, false);
  }
  const auto opts = ReadOptions(text, t);
  // Slurm names a job after its script by default.
  const auto dot = options.script_name.rfind('.');
  Json meta = {{"name", TesseraName(options.script_name.substr(
                            0, dot == std::string::npos || dot == 0 ? std::string::npos : dot))}};
  Json s = Json::object();
  Json env = Json::object();
  Allocation a;
  bool hold = false;
  bool export_all = true;
  std::optional<std::int64_t> total_gpus, gpus_per_task;
  std::string total_gpu_type;
  std::string working_dir = options.submit_dir;
  s["maxRestarts"] = 0;  // Slurm does not rerun a failed batch script unless asked to
  for (const auto& o : opts) {
    if (auto it = IgnoredOptions().find(o.name); it != IgnoredOptions().end()) {
      t.Ignore(o.field, it->second);
    } else if (auto r = RefusedOptions().find(o.name); r != RefusedOptions().end()) {
      t.Refuse(o.field, r->second);
    } else if (o.name == "nodes") {
      if (o.value.find('-') != std::string::npos) {
        t.Refuse(o.field, "a range of nodes is not supported; give one count");
      } else if (auto n = Count(o, 1, kMaxTasksPerJob, t)) {
        a.nodes = *n;
        t.Map(o.field, "-> workers = " + o.value);
      }
    } else if (o.name == "ntasks-per-node") {
      if ((a.tasks_per_node = Count(o, 1, kMaxProcessesPerWorker, t))) {
        t.Map(o.field,
              "-> SLURM_NTASKS_PER_NODE (the script starts its ranks, e.g. torchrun "
              "--nproc-per-node=$SLURM_NTASKS_PER_NODE)");
      }
    } else if (o.name == "ntasks") {
      if ((a.ntasks = Count(o, 1, kMaxTasksPerJob * std::int64_t{64}, t))) {
        t.Map(o.field, "-> SLURM_NTASKS");
      }
    } else if (o.name == "cpus-per-task") {
      if ((a.cpus_per_task = Count(o, 1, 1024, t))) t.Map(o.field, "-> spec.cpu");
    } else if (o.name == "gpus-per-node") {
      if (auto c = TypedCount(o, t)) SetGpus(a, c->first, c->second, o, t);
    } else if (o.name == "gres") {
      for (std::size_t start = 0; start <= o.value.size();) {
        const std::size_t comma = std::min(o.value.find(',', start), o.value.size());
        const std::string gres = o.value.substr(start, comma - start);
        start = comma + 1;
        if (!gres.starts_with("gpu")) {
          t.Refuse(o.field, "generic resource " + Quote(gres) + " is not scheduled by Tessera");
          continue;
        }
        Option g = o;
        g.value = gres.size() > 4 ? gres.substr(4) : "1";
        if (auto c = TypedCount(g, t)) SetGpus(a, c->first, c->second, o, t);
      }
    } else if (o.name == "gpus") {
      if (auto c = TypedCount(o, t)) {
        total_gpus = c->first;
        total_gpu_type = c->second;
      }
    } else if (o.name == "gpus-per-task") {
      Option n = o;
      gpus_per_task = Count(n, 0, kMaxGpusPerTask, t);
    } else if (o.name == "mem") {
      if ((a.mem_mib = SizeMib(o, t))) {
        t.Map(o.field, *a.mem_mib == 0 ? "0 (all of a node's memory): no memory is reserved"
                                       : "-> spec.memory per worker");
      }
    } else if (o.name == "mem-per-gpu") {
      if ((a.mem_per_gpu_mib = SizeMib(o, t))) t.Map(o.field, "-> spec.memory (x GPUs per node)");
    } else if (o.name == "mem-per-cpu") {
      if ((a.mem_per_cpu_mib = SizeMib(o, t))) t.Map(o.field, "-> spec.memory (x CPUs per node)");
    } else if (o.name == "time") {
      auto d = ParseSlurmDuration(o.value);
      if (!d) {
        t.Refuse(o.field, d.error() +
                              " (minutes, minutes:seconds, hours:minutes:seconds, "
                              "days-hours[:minutes[:seconds]], or UNLIMITED)");
      } else if (*d > kMaxTimeLimitSeconds) {
        t.Refuse(o.field, "is more than " + std::to_string(kMaxTimeLimitSeconds / 86400) + " days");
      } else {
        a.time_seconds = *d;
        t.Map(o.field, *d == 0 ? "no time limit"
                               : "-> spec.timeLimitSeconds = " + std::to_string(*d) +
                                     " (enforced by the controller)");
      }
    } else if (o.name == "job-name") {
      meta["name"] = TesseraName(o.value);
      t.Map(o.field, "-> metadata.name = " + meta["name"].get<std::string>() +
                         " (SLURM_JOB_NAME keeps " + Quote(o.value) + ")");
      env["SLURM_JOB_NAME"] = o.value;
    } else if (o.name == "partition") {
      if (o.value.find(',') != std::string::npos || !ValidQueuePath(o.value)) {
        t.Refuse(o.field, "must name one queue (lower-case letters, digits, '-' and '/'), got " +
                              Quote(o.value));
      } else {
        meta["queue"] = o.value;
        env["SLURM_JOB_PARTITION"] = o.value;
        t.Map(o.field, "-> metadata.queue");
      }
    } else if (o.name == "array") {
      if ((a.array = ArrayIds(o, &a.array_max_running, t))) {
        t.Map(o.field, "-> BatchJob, " + std::to_string(a.array->size()) +
                           " tasks; SLURM_ARRAY_TASK_ID from TASK_INDEX" +
                           (a.array_max_running > 0 ? ", %N -> spec.parallelism" : ""));
      }
    } else if (o.name == "dependency") {
      Json deps = Dependencies(o, t);
      if (!s.contains("dependencies")) s["dependencies"] = Json::array();
      for (auto& d : deps) s["dependencies"].push_back(std::move(d));
    } else if (o.name == "chdir") {
      working_dir = o.value.starts_with("/") || options.submit_dir.empty()
                        ? o.value
                        : options.submit_dir + "/" + o.value;
      t.Map(o.field, "-> spec.workingDir");
    } else if (o.name == "hold") {
      hold = true;
      t.Map(o.field, "-> submitted held (`tessera release NAME` starts it)");
    } else if (o.name == "requeue") {
      s["maxRestarts"] = 3;
      t.Map(o.field, "-> spec.maxRestarts = 3 (rerun after a failure or a lost node)");
    } else if (o.name == "no-requeue") {
      s["maxRestarts"] = 0;
      t.Map(o.field, "-> spec.maxRestarts = 0");
    } else if (o.name == "priority") {
      if (auto p = Count(o, -kMaxPriority, kMaxPriority, t)) {
        s["priority"] = *p;
        t.Map(o.field, "-> spec.priority");
      }
    } else if (o.name == "export") {
      export_all = false;
      for (std::size_t start = 0; start <= o.value.size();) {
        const std::size_t comma = std::min(o.value.find(',', start), o.value.size());
        const std::string item = o.value.substr(start, comma - start);
        start = comma + 1;
        if (item == "ALL") {
          export_all = true;
        } else if (item == "NONE" || item == "NIL" || item.empty()) {
        } else if (const auto eq = item.find('='); eq != std::string::npos) {
          env[item.substr(0, eq)] = item.substr(eq + 1);
        } else if (auto v = options.submit_env.find(item); v != options.submit_env.end()) {
          env[item] = v->second;
        } else {
          t.Refuse(o.field, Quote(item) + " is not set in the submitting environment");
        }
      }
      t.Map(o.field, "-> spec.env");
    }
  }
  // GPUs given for the whole job or per task, as per node.
  const std::int64_t tpn = a.tasks_per_node.value_or(1);
  if (total_gpus) {
    const Option o{"gpus", "", "--gpus"};
    if (*total_gpus % a.nodes != 0) {
      t.Refuse("--gpus", std::to_string(*total_gpus) + " GPUs do not split evenly over " +
                             std::to_string(a.nodes) + " nodes; use --gpus-per-node");
    } else {
      SetGpus(a, *total_gpus / a.nodes, total_gpu_type, o, t);
    }
  }
  if (gpus_per_task)
    SetGpus(a, *gpus_per_task * tpn, "", {"gpus-per-task", "", "--gpus-per-task"}, t);
  if (a.array && a.nodes > 1) {
    t.Refuse("--array",
             "array tasks of more than one node are not supported (each array task "
             "is one BatchJob task, on one node)");
  }
  if (a.gpus_per_node && *a.gpus_per_node > kMaxGpusPerTask) {
    t.Refuse("GPUs per node", std::to_string(*a.gpus_per_node) + " is more than a node has (" +
                                  std::to_string(kMaxGpusPerTask) + ")");
  }
  if (!t.ok()) return t.Finish({}, false);

  // The allocation's environment, as Slurm sets it for the batch script.
  const std::int64_t gpus = a.gpus_per_node.value_or(0);
  env["SLURM_JOB_NUM_NODES"] = std::to_string(a.nodes);
  env["SLURM_NNODES"] = std::to_string(a.nodes);
  env["SLURM_CLUSTER_NAME"] = "tessera";
  if (!env.contains("SLURM_JOB_NAME")) env["SLURM_JOB_NAME"] = meta["name"];
  if (!options.submit_dir.empty()) env["SLURM_SUBMIT_DIR"] = options.submit_dir;
  if (a.tasks_per_node) env["SLURM_NTASKS_PER_NODE"] = std::to_string(*a.tasks_per_node);
  if (a.ntasks || a.tasks_per_node) {
    env["SLURM_NTASKS"] = std::to_string(a.ntasks.value_or(tpn * a.nodes));
    env["SLURM_NPROCS"] = env["SLURM_NTASKS"];
  }
  if (gpus > 0) env["SLURM_GPUS_PER_NODE"] = std::to_string(gpus);
  if (a.cpus_per_task) env["SLURM_CPUS_PER_TASK"] = std::to_string(*a.cpus_per_task);
  if (a.array) {
    env["SLURM_ARRAY_TASK_COUNT"] = std::to_string(a.array->size());
    env["SLURM_ARRAY_TASK_MIN"] =
        std::to_string(*std::min_element(a.array->begin(), a.array->end()));
    env["SLURM_ARRAY_TASK_MAX"] =
        std::to_string(*std::max_element(a.array->begin(), a.array->end()));
  }
  if (export_all) {
    // Slurm's default, --export=ALL: the submitting environment, less what Tessera sets.
    const auto& reserved = ReservedEnvNames();
    int copied = 0;
    for (const auto& [k, v] : options.submit_env) {
      if (env.contains(k) || k.starts_with("SLURM_") || k.starts_with("TESSERA_") ||
          std::find(reserved.begin(), reserved.end(), k) != reserved.end() || v.size() > 4096 ||
          k.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") !=
              std::string::npos) {
        continue;
      }
      env[k] = v;
      ++copied;
    }
    t.Map("--export", "ALL (Slurm's default): " + std::to_string(copied) +
                          " variables of the submitting environment -> spec.env");
  }
  env["TESSERA_BATCH_SCRIPT"] = std::string(text);

  const std::string kind = a.array ? "BatchJob" : "TrainingJob";
  if (a.array) {
    s["tasks"] = a.array->size();
    if (a.array_max_running > 0) s["parallelism"] = a.array_max_running;
    s["gpusPerTask"] = gpus;
  } else {
    s["workers"] = a.nodes;
    s["gpusPerWorker"] = gpus;
    if (a.nodes > 1) {
      s["successPolicy"] = "Rank0";
      t.Map("script",
            "runs once, on rank 0's node; the job ends when it does (successPolicy "
            "Rank0), the other " +
                std::to_string(a.nodes - 1) +
                " node(s) hold their GPUs for the ranks the script starts");
    } else {
      t.Map("script", "runs once, on the allocated node");
    }
  }
  if (!a.gpu_type.empty()) {
    std::string model = a.gpu_type;
    std::transform(model.begin(), model.end(), model.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    s["gpuModels"] = Json::array({model});
  }
  const std::int64_t cpus = a.cpus_per_task.value_or(0) * tpn;
  if (cpus > 0) s["cpu"] = cpus;
  std::int64_t mem = a.mem_mib.value_or(0);
  if (a.mem_per_gpu_mib) mem = *a.mem_per_gpu_mib * gpus;
  if (a.mem_per_cpu_mib) mem = *a.mem_per_cpu_mib * std::max<std::int64_t>(cpus, 1);
  if (mem > 0) s["memory"] = std::to_string(mem) + "Mi";
  if (a.time_seconds && *a.time_seconds > 0) s["timeLimitSeconds"] = *a.time_seconds;
  if (!working_dir.empty()) s["workingDir"] = working_dir;
  if (s["maxRestarts"] == 0) {
    t.Map("maxRestarts", "0: a failed script is not rerun, as in Slurm (--requeue reruns it)");
  }
  s["env"] = env;
  s["command"] = {"/bin/sh", "-c", Launcher(a), "tessera-sbatch"};
  return t.Finish({{"apiVersion", "tessera/v1"}, {"kind", kind}, {"metadata", meta}, {"spec", s}},
                  hold);
}

}  // namespace tessera
