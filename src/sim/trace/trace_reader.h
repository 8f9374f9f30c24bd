// Reading traces: the format is recognised from the header line, or forced by name.
// A malformed row fails the read with "FILE:LINE:COLUMN: column 'NAME': reason"; with
// skip_bad_rows it is skipped and counted instead. Never throws, never crashes on bad input.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "sim/trace/trace_job.h"

namespace tessera {

struct TraceReadOptions {
  std::string format;  // empty = detect from the header; else one of TraceFormats()
  bool skip_bad_rows = false;
};

// "openb-pods", "itp", "muri", "philly", "sacct", "csv".
std::vector<std::string> TraceFormats();

Result<Trace> ReadTrace(const std::string& path, const TraceReadOptions& options = {});

}  // namespace tessera
