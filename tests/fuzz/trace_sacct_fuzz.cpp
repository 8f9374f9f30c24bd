// The sacct trace reader (src/sim/trace/), through ReadTrace with the format forced;
// the properties are in trace_fuzz.h.
#include "fuzz/trace_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return tessera::fuzz::ReadTraceInput(data, size, "sacct");
}
