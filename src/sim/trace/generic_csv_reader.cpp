// The generic CSV format, for traces people bring themselves:
// submit_time,gpus,duration[,user][,gpu_model][,id][,cpu_milli][,memory_mib], times in
// seconds. A fractional gpus below 1 (0.5) is a share of one GPU.
#include <cmath>

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
  return job;
}

}  // namespace

const TraceFormat& GenericCsvFormat() {
  static const TraceFormat* const format = new TraceFormat{
      .name = "csv",
      .title = "generic CSV",
      .required = {"submit_time", "gpus", "duration"},
      .optional = {"user", "gpu_model", "id", "cpu_milli", "memory_mib"},
      .strict_columns = true,
      .make_parser = [] { return TraceRowParser(ParseGenericJob); },
  };
  return *format;
}

}  // namespace tessera
