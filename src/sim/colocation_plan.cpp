#include "sim/colocation_plan.h"

#include <cmath>
#include <fstream>
#include <sstream>

namespace tessera {

namespace {

constexpr const char* kPlanKind = "colocation-plan";

nlohmann::json ShapeJson(const TaskShape& s, const std::vector<std::string>& models) {
  return {{"gpus", s.gpus},
          {"gpuMilli", s.gpu_milli},
          {"cpuMilli", s.cpu_milli},
          {"memoryMib", s.memory_mib},
          {"gpuModels", models}};
}

// Reads a plan's fields, failing with the first bad one ("plan.json: offline[3].gpus: ...").
class PlanReader {
 public:
  explicit PlanReader(std::string path) : path_(std::move(path)) {}

  Error Fail(const std::string& field, const std::string& why) const {
    return Error{Error::Code::kInvalidArgument, path_ + ": " + field + ": " + why};
  }

  Result<double> Number(const nlohmann::json& j, const std::string& at, const char* key, double lo,
                        double hi) const {
    const std::string field = at + key;
    if (!j.contains(key)) return std::unexpected(Fail(field, "is missing"));
    if (!j[key].is_number()) return std::unexpected(Fail(field, "must be a number"));
    const double v = j[key].get<double>();
    if (!(v >= lo && v <= hi)) {
      return std::unexpected(
          Fail(field, "must be within [" + Num(lo) + ", " + Num(hi) + "], got " + Num(v)));
    }
    return v;
  }

  Result<TaskShape> Shape(const nlohmann::json& j, const std::string& at,
                          std::vector<std::string>& models) const {
    TaskShape s;
    auto gpus = Number(j, at, "gpus", 1, kMaxGpusPerNode);
    if (!gpus) return std::unexpected(gpus.error());
    auto milli = Number(j, at, "gpuMilli", 1, kMilliPerGpu);
    if (!milli) return std::unexpected(milli.error());
    auto cpu = Number(j, at, "cpuMilli", 0, 1e12);
    if (!cpu) return std::unexpected(cpu.error());
    auto mem = Number(j, at, "memoryMib", 0, 1e12);
    if (!mem) return std::unexpected(mem.error());
    s.gpus = static_cast<int>(*gpus);
    s.gpu_milli = static_cast<std::int32_t>(*milli);
    s.cpu_milli = static_cast<std::int64_t>(*cpu);
    s.memory_mib = static_cast<std::int64_t>(*mem);
    if (s.gpus > 1 && s.gpu_milli != kMilliPerGpu)
      return std::unexpected(Fail(at + "gpuMilli", "must be 1000 with more than one GPU"));
    models.clear();
    if (j.contains("gpuModels")) {
      if (!j["gpuModels"].is_array())
        return std::unexpected(Fail(at + "gpuModels", "must be a list of GPU model names"));
      for (const auto& m : j["gpuModels"]) {
        if (!m.is_string())
          return std::unexpected(Fail(at + "gpuModels", "must be a list of GPU model names"));
        models.push_back(m.get<std::string>());
      }
    }
    return s;
  }

 private:
  static std::string Num(double v) {
    std::ostringstream out;
    out << v;
    return out.str();
  }
  std::string path_;
};

}  // namespace

nlohmann::json ColocationPlanJson(const ColocationWorkload& w, const ColocationOptions& o) {
  nlohmann::json services = nlohmann::json::array();
  for (std::size_t s = 0; s < w.services.size(); ++s) {
    const ColocationService& svc = w.services[s];
    nlohmann::json j = ShapeJson(svc.shape, svc.models);
    j["name"] = "svc-" + std::to_string(s);
    j["queue"] = svc.queue;
    j["maxReplicas"] = svc.max_replicas;
    j["phaseHours"] = svc.phase_hours;
    j["load"] = w.loads[s];
    services.push_back(std::move(j));
  }
  nlohmann::json offline = nlohmann::json::array();
  for (const ColocationOfflineTask& t : w.offline) {
    nlohmann::json j = ShapeJson(t.shape, t.models);
    j["submitSeconds"] = ToSeconds(t.submit);
    j["durationSeconds"] = ToSeconds(t.duration);
    offline.push_back(std::move(j));
  }
  return {{"kind", kPlanKind},
          {"simulated", true},
          {"workload", o.workload},
          {"seed", o.seed},
          {"stepSeconds", ToSeconds(o.step)},
          {"warmupSeconds", ToSeconds(o.warmup)},
          {"horizonSeconds", ToSeconds(o.horizon)},
          {"autoscalePolicy", AutoscalePolicyName(o.autoscale_policy)},
          {"scaleDownWindowSeconds", ToSeconds(o.scale_down_window)},
          {"usageWindowSeconds", ToSeconds(o.usage_window)},
          {"targetUtilisation", o.target_utilisation},
          {"onlinePeakGpus", w.online_peak_milli / kMilliPerGpu},
          {"offlineMeanGpuSeconds", w.offline_mean_gpu_seconds},
          {"services", std::move(services)},
          {"offline", std::move(offline)}};
}

Result<ColocationWorkload> ReadColocationPlan(const std::string& path, ColocationOptions& o) {
  std::ifstream in(path);
  if (!in) return IoError(path + ": cannot open");
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  const PlanReader r(path);
  if (j.is_discarded()) return std::unexpected(r.Fail("(file)", "is not JSON"));
  if (!j.is_object() || j.value("kind", "") != kPlanKind) {
    return std::unexpected(r.Fail("kind", std::string("must be '") + kPlanKind + "'"));
  }
  constexpr double kDaySeconds = 86400;
  ColocationOptions timing = o;
  struct {
    const char* key;
    Tick* into;
    double lo, hi;
  } times[] = {{"stepSeconds", &timing.step, 1, 3600},
               {"warmupSeconds", &timing.warmup, 0, 30 * kDaySeconds},
               {"horizonSeconds", &timing.horizon, 1, 365 * kDaySeconds},
               {"scaleDownWindowSeconds", &timing.scale_down_window, 0, kDaySeconds},
               {"usageWindowSeconds", &timing.usage_window, 0, kDaySeconds}};
  for (auto& t : times) {
    auto v = r.Number(j, "", t.key, t.lo, t.hi);
    if (!v) return std::unexpected(v.error());
    *t.into = FromSeconds(*v);
  }
  if (j.contains("autoscalePolicy")) {  // absent in plans written before kpa: hpa
    const auto& p = j["autoscalePolicy"];
    auto policy = p.is_string() ? ParseAutoscalePolicy(p.get<std::string>()) : std::nullopt;
    if (!policy) {
      return std::unexpected(
          r.Fail("autoscalePolicy", "must be " + std::string(kAutoscalePolicyNames)));
    }
    timing.autoscale_policy = *policy;
  }
  auto u = r.Number(j, "", "targetUtilisation", 1e-9, 1);
  if (!u) return std::unexpected(u.error());
  timing.target_utilisation = *u;
  if (j.contains("workload") && j["workload"].is_string()) timing.workload = j["workload"];
  const auto steps =
      static_cast<std::size_t>((timing.warmup + timing.horizon + timing.step - 1) / timing.step);
  ColocationWorkload w;
  if (!j.contains("services") || !j["services"].is_array() || j["services"].empty())
    return std::unexpected(r.Fail("services", "must be a non-empty list"));
  for (std::size_t i = 0; i < j["services"].size(); ++i) {
    const auto& js = j["services"][i];
    const std::string at = "services[" + std::to_string(i) + "].";
    ColocationService svc;
    auto shape = r.Shape(js, at, svc.models);
    if (!shape) return std::unexpected(shape.error());
    svc.shape = *shape;
    auto replicas = r.Number(js, at, "maxReplicas", 1, 1e6);
    if (!replicas) return std::unexpected(replicas.error());
    svc.max_replicas = static_cast<int>(*replicas);
    svc.phase_hours = js.value("phaseHours", 0.0);
    svc.queue = js.value("queue", "online");
    if (!js.contains("load") || !js["load"].is_array() || js["load"].size() < steps) {
      return std::unexpected(r.Fail(at + "load", "must list one load in [0, 1] for each of the " +
                                                     std::to_string(steps) + " steps"));
    }
    std::vector<double> load;
    for (const auto& v : js["load"]) {
      if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= 1))
        return std::unexpected(r.Fail(at + "load", "every value must be a number in [0, 1]"));
      load.push_back(v.get<double>());
    }
    w.online_peak_milli +=
        svc.max_replicas * static_cast<double>(svc.shape.gpus) * svc.shape.gpu_milli;
    w.services.push_back(std::move(svc));
    w.loads.push_back(std::move(load));
  }
  if (!j.contains("offline") || !j["offline"].is_array())
    return std::unexpected(r.Fail("offline", "must be a list"));
  Tick last = -kNever;
  for (std::size_t i = 0; i < j["offline"].size(); ++i) {
    const auto& jt = j["offline"][i];
    const std::string at = "offline[" + std::to_string(i) + "].";
    ColocationOfflineTask t;
    auto shape = r.Shape(jt, at, t.models);
    if (!shape) return std::unexpected(shape.error());
    t.shape = *shape;
    auto submit =
        r.Number(jt, at, "submitSeconds", -ToSeconds(timing.warmup), ToSeconds(timing.horizon));
    if (!submit) return std::unexpected(submit.error());
    auto duration = r.Number(jt, at, "durationSeconds", 0.001, 365 * kDaySeconds);
    if (!duration) return std::unexpected(duration.error());
    t.submit = FromSeconds(*submit);
    t.duration = FromSeconds(*duration);
    if (t.submit < last) return std::unexpected(r.Fail(at + "submitSeconds", "must not decrease"));
    last = t.submit;
    w.offline.push_back(std::move(t));
  }
  w.offline_mean_gpu_seconds = j.value("offlineMeanGpuSeconds", 0.0);
  o = timing;
  return w;
}

}  // namespace tessera
