#include "sim/colocation_summary.h"

namespace tessera {

namespace {

nlohmann::json Pairs(const std::vector<std::pair<double, double>>& s) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& [x, y] : s) a.push_back({x, y});
  return a;
}

}  // namespace

nlohmann::json ColocationHeadJson(const ColocationResult& r, const ColocationOptions& o) {
  return {{"colocation",
           {{"workload", r.workload},
            {"services", r.services},
            {"online_peak_gpus", r.online_peak_gpus},
            {"offline_tasks", r.offline_tasks},
            {"offline_mean_gpu_seconds", r.offline_mean_gpu_seconds},
            {"horizon_seconds", ToSeconds(o.horizon)},
            {"step_seconds", ToSeconds(o.step)},
            {"online_share", o.online_share},
            {"offline_load", o.offline_load},
            {"target_utilisation", o.target_utilisation},
            {"trough", o.trough},
            {"usage_window_seconds", ToSeconds(o.usage_window)},
            {"autoscale_policy", AutoscalePolicyName(o.autoscale_policy)},
            {"scale_down_window_seconds", ToSeconds(o.scale_down_window)},
            {"peak_hour", o.peak_hour},
            {"burst_minutes", o.burst.size()},
            {"placement", o.placement},
            {"seed", o.seed}}}};
}

nlohmann::json ColocationRunJson(const ColocationRun& r) {
  return {{"policy", r.name},
          {"mode", r.mode},
          {"oversell", r.oversell},
          {"slo_attainment", r.slo_attainment},
          {"slo_attainment_worst_hour", r.slo_attainment_worst_hour},
          {"gpu_allocation_ratio", r.allocation_ratio},
          {"online_allocation_ratio", r.online_allocation_ratio},
          {"offline_allocation_ratio", r.offline_allocation_ratio},
          {"oversold_ratio", r.oversold_ratio},
          {"gpu_utilisation", r.utilisation},
          {"offline_gpu_hours_done", r.offline_gpu_hours_done},
          {"offline_gpu_hours_lost", r.offline_gpu_hours_lost},
          {"offline_tasks_submitted", r.offline_tasks_submitted},
          {"offline_tasks_done", r.offline_tasks_done},
          {"offline_queue_seconds_mean", r.offline_queue_seconds_mean},
          {"evictions", r.evictions},
          {"evictions_for_online", r.evictions_for_online},
          {"evictions_for_credit", r.evictions_for_credit},
          {"online_replica_starts", r.online_replica_starts},
          {"online_replica_seconds", r.online_replica_seconds},
          {"static_peak_replica_seconds", r.static_peak_replica_seconds},
          {"series",
           {{"gpu_allocation_ratio", Pairs(r.allocation_series)},
            {"slo_attainment", Pairs(r.slo_series)},
            {"online_demand", Pairs(r.demand_series)}}},
          {"run_wall_seconds", r.wall_seconds}};
}

}  // namespace tessera
