// Slurm accounting records as `sacct --parsable2` prints them ('|'-separated, a header line):
// a Slurm site's own history. One row per job; job steps (JobID 123.batch, 123.0) are passed
// over. GPUs come from AllocTRES (gres/gpu=N), or ReqTRES for jobs that never started; times
// are sacct's local clock, taken from the earliest submission.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/slurm_time.h"
#include "sim/trace/trace_format.h"

namespace tessera {
namespace {

// A TRES list ("billing=16,cpu=16,gres/gpu=4,gres/gpu:a100=4,mem=64G,node=1") read into `job`.
Status ReadTres(const CsvRow& row, std::string_view column, TraceJob& job) {
  const std::string_view text = row.Text(column);
  std::int64_t typed_gpus = 0;
  bool untyped = false;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    start = comma + 1;
    const auto eq = item.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    auto bad = [&](std::string_view what) {
      return row.Fail(column, std::string(what) + " in '" + Printable(item) + "'");
    };
    if (key == "mem") {
      double factor = 1.0 / 1024;  // K
      std::string_view digits = value;
      if (!digits.empty() && std::isalpha(static_cast<unsigned char>(digits.back()))) {
        const char unit = digits.back();
        factor = unit == 'K'   ? 1.0 / 1024
                 : unit == 'M' ? 1
                 : unit == 'G' ? 1024
                 : unit == 'T' ? 1024.0 * 1024
                               : -1;
        digits.remove_suffix(1);
      }
      auto mib = ParseNumber(digits);
      if (!mib || factor < 0 || *mib < 0) return bad("a memory size such as 64G expected");
      job.memory_mib = std::min<std::int64_t>(std::llround(*mib * factor), kMaxTraceMemoryMib);
      continue;
    }
    const bool gpu = key == "gres/gpu" || key.starts_with("gres/gpu:");
    if (!gpu && key != "cpu" && key != "node") continue;
    auto n = ParseWholeNumber(value);
    if (!n || *n < 0) return bad("a whole number expected");
    if (key == "cpu") {
      job.cpu_milli = std::min(*n, kMaxTraceCpuMilli / 1000) * 1000;
    } else if (key == "node") {
      job.nodes = static_cast<int>(std::min(*n, kMaxTraceNodes));
    } else if (key == "gres/gpu") {
      untyped = true;
      job.gpus = static_cast<int>(std::min(*n, kMaxTraceGpus));
    } else {
      typed_gpus += *n;
      std::string model(key.substr(9));
      std::transform(model.begin(), model.end(), model.begin(),
                     [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
      if (std::find(job.gpu_models.begin(), job.gpu_models.end(), model) == job.gpu_models.end())
        job.gpu_models.push_back(model);
    }
  }
  if (!untyped) job.gpus = static_cast<int>(std::min(typed_gpus, kMaxTraceGpus));
  job.gpu_milli = WholeGpuMilli(job.gpus);
  return {};
}

// A Submit/Start/End field in seconds; nullopt for "Unknown", "None" and empty (never started,
// still running).
Result<std::optional<std::int64_t>> Time(const CsvRow& row, std::string_view column) {
  const std::string_view text = row.Text(column);
  if (text.empty() || text == "Unknown" || text == "None") return std::nullopt;
  auto t = ParseSlurmTimestamp(text);
  if (!t) return row.Fail(column, t.error());
  return *t;
}

Result<TraceJob> ParseSacctJob(const CsvRow& row) {
  TraceJob job;
  TRACE_ASSIGN_OR_RETURN(job.id, row.RequiredText("jobid"));
  TRACE_ASSIGN_OR_RETURN(const auto submit, Time(row, "submit"));
  if (!submit) return row.Fail("submit", "every job has a submit time");
  job.submit = *submit * 1000;
  TRACE_ASSIGN_OR_RETURN(const auto start, Time(row, "start"));
  TRACE_ASSIGN_OR_RETURN(const auto end, Time(row, "end"));
  if (start && row.Has("elapsed") && !row.IsEmpty("elapsed")) {
    auto elapsed = ParseSlurmDuration(row.Text("elapsed"));
    if (!elapsed) return row.Fail("elapsed", elapsed.error());
    job.duration = *elapsed * 1000;
  } else if (start && end) {
    if (*end < *start) return row.Fail("end", "is before Start");
    job.duration = (*end - *start) * 1000;
  }
  const bool allocated = !row.IsEmpty("alloctres");
  if (auto s = ReadTres(row, allocated || !row.Has("reqtres") ? "alloctres" : "reqtres", job); !s) {
    return std::unexpected(s.error());
  }
  job.user = std::string(row.Text("user"));
  job.account = std::string(row.Text("account"));
  const std::string_view state = row.Text("state");  // "CANCELLED by 1234": the first word
  job.status = std::string(state.substr(0, state.find(' ')));
  return job;
}

// Times from the earliest submission, jobs in submission order (sacct sorts by job id).
void FromFirstSubmission(Trace& trace) {
  Tick first = std::numeric_limits<Tick>::max();
  for (const auto& j : trace.jobs) first = std::min(first, j.submit);
  for (auto& j : trace.jobs) j.submit -= first;
  std::stable_sort(trace.jobs.begin(), trace.jobs.end(),
                   [](const TraceJob& a, const TraceJob& b) { return a.submit < b.submit; });
}

}  // namespace

const TraceFormat& SacctFormat() {
  static const TraceFormat* const format = new TraceFormat{
      .name = "sacct",
      .title = "Slurm sacct --parsable2",
      .required = {"jobid", "submit", "start", "end", "alloctres"},
      .optional = {"user", "account", "state", "elapsed", "reqtres", "jobname", "partition",
                   "nnodes", "timelimit", "exitcode"},
      .strict_columns = false,
      .make_parser = [] { return TraceRowParser(ParseSacctJob); },
      // Job steps: 123.batch, 123.extern, 123.0 (their resources are the job's own).
      .is_not_a_job =
          [](const CsvRow& row) { return row.Text("jobid").find('.') != std::string_view::npos; },
      .finish = FromFirstSubmission,
  };
  return *format;
}

}  // namespace tessera
