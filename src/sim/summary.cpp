#include "sim/summary.h"

#include <algorithm>
#include <map>

#include "sim/stats.h"

namespace tessera {

namespace {

nlohmann::json Bins(const std::vector<std::optional<double>>& v) {
  auto a = nlohmann::json::array();
  for (const auto& x : v) a.push_back(x ? nlohmann::json(*x) : nlohmann::json(nullptr));
  return a;
}

nlohmann::json DistJson(const Distribution& d) {
  return {{"mean", d.mean}, {"p50", d.p50}, {"p95", d.p95},
          {"p99", d.p99},   {"max", d.max}, {"count", d.count}};
}

nlohmann::json Series(const std::vector<std::pair<double, double>>& s) {
  auto a = nlohmann::json::array();
  for (const auto& [x, y] : s) a.push_back({x, y});
  return a;
}

struct JobStats {
  std::vector<double> jct, queue;
  std::int64_t jobs = 0, finished = 0, preemptions = 0;
  double gpu_seconds_lost = 0;

  void Add(const JobOutcome& j) {
    ++jobs;
    if (j.unschedulable) return;
    if (j.finish >= 0) {
      ++finished;
      jct.push_back(ToSeconds(j.finish - j.submit));
    }
    if (j.first_start >= 0) queue.push_back(ToSeconds(j.first_start - j.submit));
    preemptions += j.preemptions;
    gpu_seconds_lost += j.gpu_seconds_lost;
  }
  // jct_seconds and queue_seconds as at the top level of a result (mean, p50, p95, ...).
  nlohmann::json Json() const {
    return {{"jobs", jobs},
            {"finished", finished},
            {"jct_seconds", DistJson(Summarize(jct))},
            {"queue_seconds", DistJson(Summarize(queue))},
            {"preemptions", preemptions},
            {"gpu_hours_lost_to_preemption", gpu_seconds_lost / 3600.0}};
  }
};

// Per queue of the tree (inner queues count their subtree) and the share each received.
nlohmann::json QueuesJson(const ReplayResult& r) {
  std::map<std::string, JobStats> stats;
  for (const auto& j : r.jobs) {
    // The leaf and every queue above it: "a/b/c" counts in "a/b/c", "a/b" and "a".
    for (std::size_t at = j.queue.find('/'); at != std::string::npos;
         at = j.queue.find('/', at + 1)) {
      stats[j.queue.substr(0, at)].Add(j);
    }
    stats[j.queue].Add(j);
  }
  // Share over time for the queues worth a chart: the top-level queues of a tree with inner
  // queues, and the 12 leaves that held the most GPU-time.
  std::vector<const QueueShare*> leaves;
  for (const auto& q : r.queues) {
    if (q.leaf) leaves.push_back(&q);
  }
  std::stable_sort(leaves.begin(), leaves.end(), [](const QueueShare* a, const QueueShare* b) {
    return a->gpu_seconds > b->gpu_seconds;
  });
  if (leaves.size() > 12) leaves.resize(12);
  auto out = nlohmann::json::object();
  for (const auto& q : r.queues) {
    nlohmann::json e = stats[q.path].Json();
    const bool top_inner = !q.leaf && q.path.find('/') == std::string::npos;
    if (top_inner || std::find(leaves.begin(), leaves.end(), &q) != leaves.end()) {
      e["share_over_time"] = Series(q.share);
    }
    e["entitlement"] = q.entitlement;
    e["share_mean"] = q.share_mean;
    e["leaf"] = q.leaf;
    e["demand_seconds"] = q.demand_seconds;
    e["gpu_hours"] = q.gpu_seconds / 3600.0;
    out[q.path] = std::move(e);
  }
  return out;
}

}  // namespace

nlohmann::json SummaryHead(const SummaryHeader& h, const Cluster& cluster) {
  std::map<std::string, int> models;
  for (const auto& n : cluster.nodes()) models[cluster.models().Name(n.gpu_model)] += n.gpu_count;
  return {{"experiment", h.experiment},
          {"trace",
           {{"path", h.trace_path},
            {"jobs", h.trace_jobs},
            {"format", h.trace_format},
            {"skipped_rows", h.skipped_rows}}},
          {"cluster",
           {{"spec", h.cluster_spec},
            {"nodes", cluster.node_count()},
            {"gpus", cluster.total_gpus()},
            {"gpu_models", models}}},
          {"simulated_gpus", true},
          {"generated_by", "tessera sim"},
          {"results", nlohmann::json::array()}};
}

nlohmann::json AllocationResultJson(const AllocationPolicyResult& r) {
  auto at = [&](int pct) {
    return r.allocation_mean[pct] ? nlohmann::json(*r.allocation_mean[pct])
                                  : nlohmann::json(nullptr);
  };
  return {{"policy", r.policy},
          {"seeds", r.seeds},
          {"allocation_at_demand", Bins(r.allocation_mean)},
          {"allocation_at_demand_min", Bins(r.allocation_min)},
          {"allocation_at_demand_max", Bins(r.allocation_max)},
          {"fragmentation_at_demand", Bins(r.fragmentation_mean)},
          {"fragmentation_of_free_at_demand", Bins(r.fragmentation_of_free_mean)},
          {"allocation_at_100", at(100)},
          {"pods_arrived_mean", r.pods_arrived_mean},
          {"pods_failed_mean", r.pods_failed_mean},
          {"sim_wall_seconds", r.wall_seconds}};
}

nlohmann::json ReplayResultJson(const ReplayResult& r) {
  std::vector<double> jct, queue;
  std::int64_t finished = 0, unschedulable = 0;
  for (const auto& j : r.jobs) {
    if (j.unschedulable) {
      ++unschedulable;
      continue;
    }
    if (j.finish >= 0) {
      ++finished;
      jct.push_back(ToSeconds(j.finish - j.submit));
    }
    if (j.first_start >= 0) queue.push_back(ToSeconds(j.first_start - j.submit));
  }
  const double ratio =
      r.capacity_gpu_seconds > 0 ? r.allocated_gpu_seconds / r.capacity_gpu_seconds : 0;
  std::map<std::string, JobStats> by_kind;
  for (const auto& j : r.jobs) by_kind[j.kind].Add(j);
  auto kinds = nlohmann::json::object();
  for (const auto& [kind, st] : by_kind) kinds[kind] = st.Json();
  return {
      {"policy", r.policy},
      {"placement", r.placement},
      {"oracle", r.oracle},
      {"seeds", 1},
      {"jct_seconds", DistJson(Summarize(jct))},
      {"queue_seconds", DistJson(Summarize(queue))},
      {"makespan_seconds", ToSeconds(r.last_finish - r.first_submit)},
      {"gpu_allocation_ratio", ratio},
      {"jobs",
       {{"submitted", r.jobs.size()}, {"finished", finished}, {"unschedulable", unschedulable}}},
      {"preemptions", r.preemptions},
      {"resizes", r.resizes},
      {"recoveries", r.recoveries},
      {"allocated_gpu_hours", r.allocated_gpu_seconds / 3600.0},
      {"gpu_hours_lost_to_preemption", r.gpu_seconds_lost / 3600.0},
      {"checkpoint_interval_seconds", ToSeconds(r.checkpoint_interval)},
      {"queues", QueuesJson(r)},
      {"kinds", std::move(kinds)},
      {"events", r.event_count},
      {"scheduling_cycles", r.schedule_calls},
      {"series",
       {{"jct_cdf", Series(CdfPoints(jct, 200))},
        {"gpus_allocated", Series(r.gpus_allocated)},
        {"queue_length", Series(r.queue_length)}}},
      {"sim_wall_seconds", r.wall_seconds}};
}

nlohmann::json WithoutWallClock(nlohmann::json j) {
  if (j.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& k = it.key();
      if (k.size() >= 13 && k.ends_with("_wall_seconds")) continue;
      if (k == "sim_wall_seconds") continue;
      out[k] = WithoutWallClock(it.value());
    }
    return out;
  }
  if (j.is_array()) {
    for (auto& e : j) e = WithoutWallClock(e);
  }
  return j;
}

}  // namespace tessera
