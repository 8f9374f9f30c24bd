#include "sim/trace/trace_reader.h"

namespace tessera {

std::vector<std::string> TraceFormats() { return {"openb-pods", "itp", "muri", "philly", "csv"}; }

Result<Trace> ReadTrace(const std::string& path, const TraceReadOptions&) {
  return NotFound(path + ": trace readers are not written yet");
}

}  // namespace tessera
