// The generic CSV format, for traces people bring themselves:
// submit_time,gpus,duration[,user][,gpu_model][,id][,cpu_milli][,memory_mib][,require][,prefer]
// [,min_workers][,max_workers], times in seconds. min_workers/max_workers make a gang of whole
// nodes elastic (workers = gpus / GPUs per node; the range is checked against the cluster). A
// fractional gpus below 1 (0.5) is a share of one GPU. require/prefer name topology levels (spine,
// leaf, node, ...); whether the cluster has them is checked against the cluster when the job
// arrives (an unknown level makes the job unschedulable, with the reason).
#include <algorithm>
#include <cmath>
#include <utility>

#include "sim/trace/trace_format.h"

namespace tessera {
namespace {

Result<TraceJob> ParseGenericJob(const CsvRow& row) {
  TraceJob job;
  // Without an id column the line number identifies the job: it is what a person fixing the
  // file needs.
  job.id = row.IsEmpty("id") ? std::to_string(row.line()) : std::string(row.Text("id"));
  TRACE_ASSIGN_OR_RETURN(job.submit, row.Seconds("submit_time"));
  TRACE_ASSIGN_OR_RETURN(job.duration, row.Seconds("duration"));
  TRACE_ASSIGN_OR_RETURN(const double gpus,
                         row.Number("gpus", 0, static_cast<double>(kMaxTraceGpus)));
  if (gpus == 0) {
    job.gpus = 0;
    job.gpu_milli = 0;
  } else if (gpus < 1) {
    const auto milli = static_cast<std::int32_t>(std::llround(gpus * 1000));
    if (milli == 0) return row.Fail("gpus", "a share smaller than 1/1000 of a GPU");
    job.gpus = 1;
    job.gpu_milli = milli;
  } else {
    if (std::trunc(gpus) != gpus) {
      return row.Fail("gpus", "'" + std::string(row.Text("gpus")) +
                                  "': only a single GPU can be shared; above 1 give whole GPUs");
    }
    job.gpus = static_cast<int>(gpus);
    job.gpu_milli = 1000;
  }
  job.user = std::string(row.Text("user"));
  job.gpu_models = SplitGpuModels(row.Text("gpu_model"));
  TRACE_ASSIGN_OR_RETURN(const auto cpu, row.OptionalInt("cpu_milli", 0, kMaxTraceCpuMilli));
  job.cpu_milli = cpu.value_or(0);
  TRACE_ASSIGN_OR_RETURN(const auto mem, row.OptionalInt("memory_mib", 0, kMaxTraceMemoryMib));
  job.memory_mib = mem.value_or(0);
  for (const auto& [column, field] :
       {std::pair{"require", &job.require}, std::pair{"prefer", &job.prefer}}) {
    const std::string_view level = row.Text(column);
    // A level name as the cluster YAML allows it; anything else is a typo or a shifted column.
    const bool ok =
        level.size() <= 64 && std::all_of(level.begin(), level.end(), [](char c) {
          return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
        });
    if (!ok) {
      return row.Fail(column, "'" + std::string(level) +
                                  "' is not a topology level name (lower-case letters, digits, "
                                  "'-' and '_', at most 64)");
    }
    *field = std::string(level);
  }
  TRACE_ASSIGN_OR_RETURN(const auto min_workers, row.OptionalInt("min_workers", 1, 100000));
  TRACE_ASSIGN_OR_RETURN(const auto max_workers, row.OptionalInt("max_workers", 1, 100000));
  if (max_workers && !min_workers) return row.Fail("max_workers", "needs min_workers");
  if (min_workers) {
    job.min_workers = static_cast<int>(*min_workers);
    job.max_workers = static_cast<int>(max_workers.value_or(*min_workers));
    if (job.max_workers < job.min_workers) {
      return row.Fail("max_workers",
                      "smaller than min_workers (" + std::to_string(job.min_workers) + ")");
    }
  }
  return job;
}

}  // namespace

const TraceFormat& GenericCsvFormat() {
  static const TraceFormat* const format = new TraceFormat{
      .name = "csv",
      .title = "generic CSV",
      .required = {"submit_time", "gpus", "duration"},
      .optional = {"user", "gpu_model", "id", "cpu_milli", "memory_mib", "require", "prefer",
                   "min_workers", "max_workers"},
      .strict_columns = true,
      .make_parser = [] { return TraceRowParser(ParseGenericJob); },
  };
  return *format;
}

}  // namespace tessera
