#include "server/scheduler_config.h"

#include <cstdint>
#include <fstream>
#include <sstream>

#include "spec/document.h"

namespace tessera {

Result<ControllerConfigFile> LoadControllerConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return IoError(path + ": cannot read");
  std::stringstream ss;
  ss << in.rdbuf();
  auto doc = ParseDocument(ss.str());
  if (!doc) return InvalidArgument(path + ": " + doc.error().message);
  ControllerConfigFile file;
  SchedulerConfig& config = file.scheduler;
  if (doc->is_null()) return file;
  if (!doc->is_object()) return InvalidArgument(path + ": must be a mapping");
  for (const auto& [key, value] : doc->items()) {
    if (key == "recovery" && value.is_string()) {
      file.recovery = ParseRecoveryMode(value.get<std::string>());
      if (!file.recovery) {
        return InvalidArgument(path + ": recovery: '" + value.get<std::string>() +
                               "' is unknown (known: " + std::string(kRecoveryModeNames) + ")");
      }
    } else if (key == "sparesPerDomain" && value.is_number_integer()) {
      const auto n = value.get<std::int64_t>();
      if (n < 0 || n > 1000) {
        return InvalidArgument(path + ": sparesPerDomain: must be 0..1000, got " +
                               std::to_string(n));
      }
      file.spares_per_domain = static_cast<int>(n);
    } else if (key == "queuePolicy" && value.is_string()) {
      config.queue_policy = value.get<std::string>();
    } else if (key == "placementPolicy" && value.is_string()) {
      config.placement_policy = value.get<std::string>();
    } else if (key == "gangPlacement" && value.is_string()) {
      config.gang_placement = value.get<std::string>();
    } else if (key == "priorityPreemption" && value.is_boolean()) {
      config.priority_preemption = value.get<bool>();
    } else if (key == "backfillReservation" && value.is_string()) {
      config.backfill_reservation = value.get<std::string>();
      if (!ParseBackfillReservation(config.backfill_reservation)) {
        return InvalidArgument(path + ": backfillReservation: '" + config.backfill_reservation +
                               "' is unknown (known: domain, gpu-count)");
      }
    } else if (key == "gpuModelChoice" && value.is_string()) {
      config.gpu_model_choice = value.get<std::string>();
      if (config.gpu_model_choice != "fastest" && config.gpu_model_choice != "blind") {
        return InvalidArgument(path + ": gpuModelChoice: '" + config.gpu_model_choice +
                               "' is unknown (known: fastest, blind)");
      }
    } else if (key == "elastic" && value.is_boolean()) {
      // Live, every job with spec.elastic is resized; there is nothing to switch off.
      if (!value.get<bool>()) {
        return InvalidArgument(path +
                               ": elastic: false is not supported: the controller resizes "
                               "every job with spec.elastic (a job that must keep its size "
                               "leaves spec.elastic out)");
      }
      config.elastic = true;
    } else if (key == "lasThresholdsGpuSeconds" && value.is_array()) {
      config.queue.las_thresholds_gpu_seconds.clear();
      for (const auto& v : value) {
        if (!v.is_number())
          return InvalidArgument(path + ": lasThresholdsGpuSeconds: numbers only");
        config.queue.las_thresholds_gpu_seconds.push_back(v.get<double>());
      }
    } else {
      return InvalidArgument(path + ": " + key + ": unknown key or wrong type");
    }
  }
  if (auto s = Scheduler::Create(config); !s) {
    return InvalidArgument(path + ": " + s.error().message);
  }
  return file;
}

}  // namespace tessera
