#include "sim/failures/measured_recovery_times.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "sim/measured_recovery_times_json.h"  // generated from the .json at build time

namespace tessera {

namespace {

using Json = nlohmann::json;

// Seconds after detection per policy of one program's run: until training resumed where the
// run measured it (PyTorch), else until every rank was reported running.
std::map<std::string, double> AfterDetect(const Json& run) {
  std::map<std::string, double> out;
  for (const auto& p : run["policies"]) {
    const char* key =
        p.contains("afterDetectResumedMsMean") ? "afterDetectResumedMsMean" : "afterDetectMsMean";
    out[p["policy"].get<std::string>()] = p[key].get<double>() / 1000.0;
  }
  return out;
}

double MeanDetect(const Json& run) {
  double sum = 0;
  for (const auto& p : run["policies"]) sum += p["detectMsMean"].get<double>() / 1000.0;
  return run["policies"].empty() ? 0 : sum / static_cast<double>(run["policies"].size());
}

}  // namespace

Json MergeMeasuredRecoveryRun(const Json& existing, const Json& run) {
  Json out = existing.is_object() ? existing : Json::object();
  out[run["program"].get<std::string>()] = run;
  const Json& restart_run = out.contains("pytorch") ? out["pytorch"] : out["sleep"];
  const Json& detect_run = out.contains("sleep") ? out["sleep"] : out["pytorch"];
  auto after = AfterDetect(restart_run);
  const double warm = after.contains("spares") ? after["spares"] : after["replace"];
  const double cold = after.contains("replace") ? std::max(0.0, after["replace"] - warm) : 0.0;
  const int workers = restart_run["workers"].get<int>();
  const double per_node = workers > 1 && after.contains("requeue") && after.contains("replace")
                              ? std::max(0.0, after["requeue"] - after["replace"]) / (workers - 1)
                              : 0.0;
  out["preset"] = Json{
      {"detect_seconds", MeanDetect(detect_run)},
      {"restart_seconds", warm},
      {"cold_start_seconds", cold},
      {"cold_start_per_node_seconds", per_node},
      {"source", "detection: " + detect_run["conditions"].get<std::string>() +
                     "; restart and cold start: " + restart_run["conditions"].get<std::string>()}};
  return out;
}

Result<MeasuredRecoveryTimes> ParseMeasuredRecoveryTimes(std::string_view json,
                                                         const std::string& source_name) {
  const auto doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object())
    return InvalidArgument(source_name + ": not a JSON object");
  if (!doc.contains("preset") || !doc["preset"].is_object()) {
    return InvalidArgument(source_name +
                           ": preset: missing (write it with tessera bench recovery "
                           "--write-preset)");
  }
  const auto& p = doc["preset"];
  MeasuredRecoveryTimes out;
  const std::pair<const char*, double*> fields[] = {
      {"detect_seconds", &out.detect_seconds},
      {"restart_seconds", &out.restart_seconds},
      {"cold_start_seconds", &out.cold_start_seconds},
      {"cold_start_per_node_seconds", &out.cold_start_per_node_seconds}};
  for (const auto& [name, value] : fields) {
    if (!p.contains(name) || !p[name].is_number()) {
      return InvalidArgument(source_name + ": preset." + name + ": missing or not a number");
    }
    *value = p[name].get<double>();
    if (!std::isfinite(*value) || *value < 0 || *value > 86400) {
      return InvalidArgument(source_name + ": preset." + name + ": must be 0..86400 seconds");
    }
  }
  out.source = p.value("source", std::string());
  return out;
}

Result<MeasuredRecoveryTimes> BuiltInMeasuredRecoveryTimes() {
  return ParseMeasuredRecoveryTimes(sim_assets::kMeasuredRecoveryTimesJson,
                                    "src/sim/failures/measured_recovery_times.json");
}

Result<MeasuredRecoveryTimes> LoadMeasuredRecoveryTimes(const std::string& name_or_path) {
  if (name_or_path == "measured") return BuiltInMeasuredRecoveryTimes();
  std::ifstream in(name_or_path);
  if (!in) {
    return InvalidArgument(
        "--recovery-times: must be measured or a file tessera bench recovery "
        "--write-preset wrote; cannot read '" +
        name_or_path + "'");
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseMeasuredRecoveryTimes(ss.str(), name_or_path);
}

}  // namespace tessera
