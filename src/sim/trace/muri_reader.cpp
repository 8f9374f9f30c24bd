// Philly jobs as prepared for the Muri paper (Muri's trace-data/*.csv). Unlike every other
// trace here its times (submit_time, duration) are in milliseconds, so they are taken as is.
#include "sim/trace/trace_format.h"

namespace tessera {
namespace {

Result<TraceJob> ParseMuriJob(const CsvRow& row) {
  TraceJob job;
  TRACE_ASSIGN_OR_RETURN(job.id, row.RequiredText("job_id"));
  TRACE_ASSIGN_OR_RETURN(const std::int64_t gpus, row.Int("num_gpu", 0, kMaxTraceGpus));
  job.gpus = static_cast<int>(gpus);
  job.gpu_milli = WholeGpuMilli(gpus);
  TRACE_ASSIGN_OR_RETURN(job.submit, row.Millis("submit_time"));
  TRACE_ASSIGN_OR_RETURN(job.duration, row.Millis("duration"));
  job.model_name = std::string(row.Text("model_name"));
  TRACE_ASSIGN_OR_RETURN(const auto iterations,
                         row.OptionalInt("iterations", 0, std::int64_t{1} << 50));
  job.iterations = iterations.value_or(0);
  return job;
}

}  // namespace

const TraceFormat& MuriFormat() {
  static const TraceFormat* const format = new TraceFormat{
      .name = "muri",
      .title = "Muri (Philly, milliseconds)",
      .required = {"job_id", "num_gpu", "submit_time", "duration"},
      .optional = {"iterations", "model_name"},
      .strict_columns = false,
      .make_parser = [] { return TraceRowParser(ParseMuriJob); },
  };
  return *format;
}

}  // namespace tessera
