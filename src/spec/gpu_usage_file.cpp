#include "spec/gpu_usage_file.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "spec/document.h"

namespace tessera {

std::string GpuUsageFileText(const GpuUsageReading& reading) {
  return nlohmann::json{{"utilization", reading.utilization},
                        {"memoryUsedBytes", reading.memory_used_bytes}}
             .dump() +
         "\n";
}

Result<GpuUsageReading> ParseGpuUsageFile(std::string_view text, std::int64_t memory_limit_bytes) {
  const auto doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_object()) return InvalidArgument("not a JSON object");
  GpuUsageReading r;
  const auto u = doc.find("utilization");
  if (u == doc.end() || !u->is_number())
    return InvalidArgument("utilization: required, a number within [0, 1]");
  r.utilization = u->get<double>();
  if (!std::isfinite(r.utilization) || r.utilization < 0 || r.utilization > 1)
    return InvalidArgument("utilization: must be within [0, 1], got " + DumpJson(*u));
  if (const auto m = doc.find("memoryUsedBytes"); m != doc.end()) {
    if (!m->is_number_integer() || m->get<std::int64_t>() < 0 ||
        (memory_limit_bytes > 0 && m->get<std::int64_t>() > memory_limit_bytes)) {
      return InvalidArgument("memoryUsedBytes: must be an integer within [0, " +
                             std::to_string(memory_limit_bytes) + "] (the GPU's memory), got " +
                             DumpJson(*m));
    }
    r.memory_used_bytes = m->get<std::int64_t>();
  }
  return r;
}

}  // namespace tessera
