// The last 15,000 jobs of Microsoft Philly (Gen-Parallel-Workloads' philly_data_training.csv):
// user, GPUs, nodes, run time and final status per job. Submit times are not in the file; each
// row has the interval since the previous submission, so the parser keeps a running clock.
#include "sim/trace/trace_format.h"

namespace tessera {
namespace {

class PhillyParser {
 public:
  Result<TraceJob> operator()(const CsvRow& row) {
    TraceJob job;
    // The interval is read first and counts even when a later field of the row is bad: a row
    // skipped under skip_bad_rows should not shift every later job's submit time.
    TRACE_ASSIGN_OR_RETURN(const Tick interval, row.Seconds("interval"));
    // Each interval is bounded, but a long enough file could still run the sum past int64.
    if (clock_ > static_cast<Tick>(kMaxTraceMillis) - interval) {
      return row.Fail("interval", "the running submit time passes " +
                                      std::to_string(static_cast<Tick>(kMaxTraceSeconds)) +
                                      " seconds");
    }
    clock_ += interval;
    job.submit = clock_;
    TRACE_ASSIGN_OR_RETURN(job.id, row.RequiredText("u_id"));
    TRACE_ASSIGN_OR_RETURN(job.user, row.RequiredText("user"));
    TRACE_ASSIGN_OR_RETURN(const std::int64_t gpus, row.Int("gpu_num", 0, kMaxTraceGpus));
    job.gpus = static_cast<int>(gpus);
    job.gpu_milli = WholeGpuMilli(gpus);
    TRACE_ASSIGN_OR_RETURN(const auto cpus,
                           row.OptionalInt("cpu_num", 0, kMaxTraceCpuMilli / 1000));
    job.cpu_milli = cpus.value_or(0) * 1000;  // 0 throughout the published file: not recorded
    TRACE_ASSIGN_OR_RETURN(const auto nodes, row.OptionalInt("node_num", 0, kMaxTraceNodes));
    job.nodes = static_cast<int>(nodes.value_or(0));
    TRACE_ASSIGN_OR_RETURN(job.duration, row.Seconds("run_time"));
    job.status = std::string(row.Text("new_status"));
    return job;
  }

 private:
  Tick clock_ = 0;
};

}  // namespace

const TraceFormat& PhillyFormat() {
  static const TraceFormat* const format = new TraceFormat{
      .name = "philly",
      .title = "Microsoft Philly (15k jobs)",
      .required = {"u_id", "user", "gpu_num", "interval", "run_time"},
      .optional = {"cpu_num", "node_num", "wall_time", "new_status"},
      .strict_columns = false,
      .make_parser = [] { return TraceRowParser(PhillyParser()); },
  };
  return *format;
}

}  // namespace tessera
