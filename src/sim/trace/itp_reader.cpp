// Microsoft ITP cluster traces (ElasticFlow's clusterNN.csv): submission time, run time and
// GPU count per job, all times in seconds.
#include "sim/trace/trace_format.h"

namespace tessera {
namespace {

Result<TraceJob> ParseItpJob(const CsvRow& row) {
  TraceJob job;
  TRACE_ASSIGN_OR_RETURN(job.id, row.RequiredText("job_id"));
  TRACE_ASSIGN_OR_RETURN(job.submit, row.Seconds("submission_time"));
  TRACE_ASSIGN_OR_RETURN(job.duration, row.Seconds("duration"));
  TRACE_ASSIGN_OR_RETURN(const std::int64_t gpus, row.Int("num_gpu", 0, kMaxTraceGpus));
  job.gpus = static_cast<int>(gpus);
  job.gpu_milli = WholeGpuMilli(gpus);
  return job;
}

}  // namespace

const TraceFormat& ItpFormat() {
  static const TraceFormat* const format = new TraceFormat{
      .name = "itp",
      .title = "Microsoft ITP",
      .required = {"job_id", "submission_time", "duration", "num_gpu"},
      .optional = {},
      .strict_columns = false,
      .make_parser = [] { return TraceRowParser(ParseItpJob); },
  };
  return *format;
}

}  // namespace tessera
