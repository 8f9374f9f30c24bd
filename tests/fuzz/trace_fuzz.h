// The body of the trace-reader harnesses (trace_*_fuzz.cpp, one per format): the input is
// written to a scratch file and read with the format forced, once failing on the first bad row
// and once skipping bad rows. Properties: never crashes; no exception reaches ReadTrace's guard
// (an Internal error); every job read keeps the invariants of trace_job.h.
#pragma once

#include <cstdint>
#include <string>

#include "fuzz/fuzz_support.h"
#include "sim/trace/trace_reader.h"

namespace tessera::fuzz {

inline void CheckTrace(const Result<Trace>& trace) {
  if (!trace) {
    FUZZ_CHECK(trace.error().code != Error::Code::kInternal,
               "an exception escaped a reader: " + trace.error().message);
    return;
  }
  for (const TraceJob& job : trace->jobs) {
    FUZZ_CHECK(job.submit >= 0, "job " + job.id + ": submitted before the trace starts");
    FUZZ_CHECK(job.duration >= 0, "job " + job.id + ": negative duration");
    FUZZ_CHECK(job.gpus >= 0, "job " + job.id + ": negative GPUs");
    FUZZ_CHECK(job.gpu_milli >= 0 && job.gpu_milli <= 1000,
               "job " + job.id + ": gpu_milli " + std::to_string(job.gpu_milli));
    FUZZ_CHECK(job.cpu_milli >= 0 && job.memory_mib >= 0,
               "job " + job.id + ": negative CPU/memory");
  }
}

inline int ReadTraceInput(const std::uint8_t* data, std::size_t size, const std::string& format) {
  const std::string path = ScratchFile(Text(data, size), ".csv");
  CheckTrace(ReadTrace(path, {.format = format, .skip_bad_rows = false}));
  CheckTrace(ReadTrace(path, {.format = format, .skip_bad_rows = true}));
  return 0;
}

}  // namespace tessera::fuzz
