#include "server/job_object.h"

namespace tessera {

nlohmann::json ResubmittableJob(const JobSpec& spec, const nlohmann::json& summary) {
  nlohmann::json object = JobSpecToJson(spec);
  nlohmann::json status = nlohmann::json::object();
  for (const auto& [key, value] : summary.items()) {
    if (key != "name" && key != "queue" && key != "kind" && key != "user") status[key] = value;
  }
  object["status"] = std::move(status);
  return object;
}

}  // namespace tessera
