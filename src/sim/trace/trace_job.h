// One job (or pod) of a trace, as read from the file: the facts traces carry, in Tessera's
// units (milliseconds, milli-CPU, MiB, milli-GPU). Readers fill what their format has; the
// simulator turns TraceJobs into Workloads for a given cluster. Jobs keep the file's order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/time.h"

namespace tessera {

struct TraceJob {
  std::string id;                       // as in the file (job id, pod name, row number)
  Tick submit = 0;                      // ms since the start of the trace
  Tick duration = 0;                    // run time in ms; 0 = unknown
  int gpus = 0;                         // GPUs touched (for a share: 1)
  std::int32_t gpu_milli = 1000;        // per GPU: 1000 = whole, less = a share; 0 when gpus = 0
  std::int64_t cpu_milli = 0;           // 0 = not given
  std::int64_t memory_mib = 0;          // 0 = not given
  std::string user;                     // empty = not given
  std::string account;                  // sacct: the Slurm account; empty = not given
  std::vector<std::string> gpu_models;  // accepted models; empty = any
  std::string qos;                      // openb: LS, BE, Burstable, Guaranteed
  std::string status;                   // philly: Pass, Failed, Killed; openb: pod_phase
  int nodes = 0;                        // philly: node_num; 0 = not given
  std::string model_name;               // muri: the DL model (resnet18, vgg16, ...)
  std::int64_t iterations = 0;          // muri: training iterations; 0 = not given
  std::string require;                  // csv: topology level all tasks must share; empty = none
  std::string prefer;                   // csv: topology level preferred; empty = none
  int min_workers = 0;                  // csv: elastic range of a gang of whole nodes; 0 = none
  int max_workers = 0;
};

struct Trace {
  std::string path;
  std::string format;  // openb-pods | itp | muri | philly | sacct | csv
  std::vector<TraceJob> jobs;
  std::int64_t skipped_rows = 0;  // malformed rows skipped under --skip-bad-rows
  // Why the first few rows were skipped (at most kMaxSkipReasons), each in the
  // "FILE:LINE:COLUMN: column 'NAME': reason" form, so that a report can show them.
  std::vector<std::string> skip_reasons;
  static constexpr int kMaxSkipReasons = 10;
};

}  // namespace tessera
