// summary.json fields of the failures experiment (see failures_summary.h).
#include "sim/failures/failures_summary.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "sim/stats.h"

namespace tessera {
namespace {

nlohmann::json Dist(const std::vector<double>& v) {
  const Distribution d = Summarize(v);
  return {{"mean", d.mean}, {"p50", d.p50}, {"p95", d.p95},
          {"p99", d.p99},   {"max", d.max}, {"count", d.count}};
}

}  // namespace

nlohmann::json FailuresHeadJson(const FailuresResult& r, const FailuresOptions& options) {
  nlohmann::json failures{
      {"source", r.source.spec},
      {"kind", r.source.model ? "model" : "file"},
      {"events", r.failure_events},
      {"lemons", r.lemons},
      {"job_mtbf_seconds", std::isfinite(r.job_mtbf_seconds) ? nlohmann::json(r.job_mtbf_seconds)
                                                             : nlohmann::json(nullptr)}};
  const FailureModel& m = r.source.model ? *r.source.model : r.source.repairs;
  nlohmann::json components = nlohmann::json::object();
  for (Component c : kAllComponents) {
    const char* per = UnitOf(c) == FailureUnit::kGpu    ? "gpu"
                      : UnitOf(c) == FailureUnit::kLeaf ? "leaf"
                                                        : "node";
    nlohmann::json entry{{"repair_hours", m[c].repair_hours}, {"per", per}};
    if (r.source.model) entry["rate_per_hour"] = m[c].rate_per_hour;
    components[std::string(ComponentName(c))] = entry;
  }
  failures["components"] = components;
  if (r.source.model) {
    failures["model"] = m.name;
    failures["lemon_fraction"] = m.lemon_fraction;
    failures["lemon_multiplier"] = m.lemon_multiplier;
  }
  nlohmann::json jobs = nlohmann::json::array();
  for (int g : options.job_gpus) jobs.push_back(g);
  nlohmann::json job{{"gpus", jobs},
                     {"days", ToSeconds(options.horizon) / 86400},
                     {"checkpoint_interval_seconds", ToSeconds(r.checkpoint_interval)},
                     {"checkpoint_interval_auto", options.checkpoint_interval <= 0},
                     {"young_daly_interval_seconds", ToSeconds(r.young_daly_interval)},
                     {"checkpoint_cost_seconds", ToSeconds(options.checkpoint_cost)},
                     {"restart_seconds", ToSeconds(options.restart)},
                     {"detect_seconds", ToSeconds(options.detect)},
                     {"cold_start_seconds", ToSeconds(options.cold_start)},
                     {"cold_start_per_node_seconds", ToSeconds(options.cold_start_per_node)},
                     {"warm_start_seconds", ToSeconds(options.warm_start)},
                     {"spares_per_leaf", options.spares_per_leaf},
                     {"max_spares", options.max_spares},
                     {"shrink_unit_workers", options.recovery.shrink_unit},
                     {"drain_threshold", options.drain.threshold},
                     {"drain_window_days", ToSeconds(options.drain.window) / 86400},
                     {"drain_repair_days", ToSeconds(options.drain_repair) / 86400},
                     {"seed", options.seed}};
  return {{"failures", failures}, {"job", job}, {"sim_wall_seconds", r.wall_seconds}};
}

nlohmann::json FailuresPolicyJson(const FailuresPolicyResult& p, const FailuresResult& result,
                                  const FailuresOptions& options) {
  const FailuresRun& t = p.total;
  const double n = std::max(1, p.seeds);
  const double ckpt = ToSeconds(result.checkpoint_interval);
  const double cost = ToSeconds(options.checkpoint_cost);
  nlohmann::json per_job = nlohmann::json::array();
  for (const auto& j : t.jobs) {
    per_job.push_back({{"name", j.name},
                       {"gpus", j.gpus},
                       {"ettr", j.ettr / n},
                       {"progress_hours", j.progress_hours / n},
                       {"interruptions", j.interruptions / n},
                       {"checkpoint_interval_seconds", ToSeconds(j.checkpoint_interval)}});
  }
  nlohmann::json sweep = nlohmann::json::array();
  for (const auto& [interval, ettr] : p.sweep) {
    sweep.push_back({{"interval_seconds", ToSeconds(interval)}, {"ettr", ettr}});
  }
  nlohmann::json timeline = nlohmann::json::array();
  for (const auto& e : p.first.timeline) {
    nlohmann::json x{{"t_seconds", ToSeconds(e.time)}, {"event", e.event}, {"job", e.job}};
    if (!e.component.empty()) x["component"] = e.component;
    if (!e.target.empty()) x["target"] = e.target;
    if (e.lost_seconds >= 0) x["lost_seconds"] = e.lost_seconds;
    if (e.latency_seconds >= 0) x["latency_seconds"] = e.latency_seconds;
    if (!e.detail.empty()) x["detail"] = e.detail;
    timeline.push_back(std::move(x));
  }
  nlohmann::json progress = nlohmann::json::array();
  for (const auto& [x, y] : p.first.progress) progress.push_back({x, y});
  return {
      {"policy", p.policy},
      {"seeds", p.seeds},
      {"ettr", p.ettr},
      {"ettr_min", p.ettr_min},
      {"ettr_max", p.ettr_max},
      // The ceiling with no failures at all: checkpoint stalls only.
      {"ettr_without_failures", ckpt / (ckpt + cost)},
      {"gpu_hours_lost", (t.redone_gpu_hours + t.recovery_idle_gpu_hours) / n},
      {"gpu_hours_lost_detail",
       {{"redone_work", t.redone_gpu_hours / n},
        {"recovery_idle", t.recovery_idle_gpu_hours / n},
        {"checkpoint_stall", t.checkpoint_gpu_hours / n},
        {"shrunk_capacity", t.shrunk_gpu_hours / n},
        {"spare_idle", t.spare_idle_gpu_hours / n}}},
      {"productive_gpu_hours", t.productive_gpu_hours / n},
      {"recovery_seconds", Dist(t.recovery_seconds)},
      {"interruptions", t.interruptions / n},
      {"job_failures", t.job_failures / n},
      {"cluster_failures", t.failures / n},
      {"actions",
       {{"requeues", t.requeues / n},
        {"replacements", t.replacements / n},
        {"replacements_off_leaf", t.replacements_off_leaf / n},
        {"hot_spares_used", t.spares_used / n},
        {"restarts_in_place", t.restarts_in_place / n},
        {"shrinks", t.shrinks / n},
        {"grows", t.grows / n},
        {"waits", t.waits / n},
        {"drained_nodes", t.drained / n},
        {"unfinished_recoveries", t.unfinished_recoveries / n}}},
      {"spares", p.first.spares_initial},
      {"checkpoint_interval_seconds", ckpt},
      {"young_daly_interval_seconds", ToSeconds(result.young_daly_interval)},
      {"best_checkpoint_interval_seconds", ToSeconds(p.best_interval)},
      {"checkpoint_sweep", sweep},
      {"per_job", per_job},
      {"timeline", timeline},
      {"timeline_truncated", p.first.timeline_truncated},
      {"series", {{"progress_hours", progress}}},
  };
}

}  // namespace tessera
