// Runs the replay once per gang placement and measures topology quality per job size class.
#include "sim/topology_experiment.h"

#include <algorithm>
#include <cmath>

#include "core/percentile.h"
#include "sched/placement/topology_gang_placer.h"
#include "sim/replay_simulation.h"

namespace tessera {

namespace {

// Size classes of the llm-10k mix (docs/workload-generator.md); the bounds are in GPUs.
struct SizeClass {
  const char* name;
  std::int64_t min_gpus;
  std::int64_t max_gpus;
};
constexpr SizeClass kClasses[] = {
    {"pretrain (>= 256 GPUs)", 256, INT64_MAX},
    {"multi-node (9-255 GPUs)", 9, 255},
    {"one node (<= 8 GPUs)", 0, 8},
    {"all", 0, INT64_MAX},
};

// Level number of a span name as JobOutcome writes it.
int SpanNumber(const Topology& t, const std::string& span) {
  if (span == "cluster" || span.empty()) return kClusterLevel;
  return LevelNumber(t, span).value_or(kClusterLevel);
}

}  // namespace

Result<PolicyVariant> ParsePolicyVariant(const std::string& name) {
  PolicyVariant v;
  v.name = name;
  std::size_t start = 0;
  bool first = true;
  while (start <= name.size()) {
    const std::size_t plus = name.find('+', start);
    const std::string part =
        name.substr(start, plus == std::string::npos ? std::string::npos : plus - start);
    if (first) {
      if (part == "easy") {
        v.backfill_reservation = "gpu-count";
      } else if (part != "domain") {
        v.queue_policy = part;  // fifo, srtf, las, ...: checked when the scheduler is made
      }
      first = false;
    } else if (part == "elastic") {
      v.elastic = true;
    } else if (part == "blind") {
      v.gpu_model_choice = "blind";
    } else if (part == "greedy") {
      v.gang_placement = "greedy";
    } else {
      return InvalidArgument("variant '" + name + "': '" + part +
                             "' is not a modifier (known: elastic, blind, greedy)");
    }
    if (plus == std::string::npos) break;
    start = plus + 1;
  }
  return v;
}

Result<std::vector<TopologyExperimentRow>> RunTopologyExperiment(
    const Cluster& cluster, const std::vector<Workload>& jobs,
    const TopologyExperimentOptions& options) {
  const Topology& topology = cluster.topology();
  // GPUs per domain of the innermost named level (a leaf), for the fewest leaves a job needs.
  std::int64_t inner_gpus = 0;
  if (!topology.levels.empty()) {
    std::vector<std::int64_t> per;
    const std::size_t inner = topology.levels.size() - 1;
    for (const Node& n : cluster.nodes()) {
      if (n.domain.size() <= inner) continue;
      if (n.domain[inner] >= per.size()) per.resize(n.domain[inner] + 1, 0);
      per[n.domain[inner]] += n.gpu_count;
    }
    for (auto g : per) inner_gpus = std::max(inner_gpus, g);
  }

  std::vector<PolicyVariant> variants = options.variants;
  if (variants.empty()) {
    for (const auto& gangs : options.gang_placements) {
      PolicyVariant v;
      v.name = gangs;
      v.queue_policy = options.queue_policy;
      v.gang_placement = gangs;
      v.backfill_reservation = options.backfill_reservation;
      variants.push_back(v);
    }
  }
  std::vector<TopologyExperimentRow> rows;
  for (const auto& variant : variants) {
    const std::string& gangs = variant.name;
    ReplayOptions ro;
    ro.scheduler.queue_policy = variant.queue_policy;
    ro.scheduler.placement_policy = options.placement_policy;
    ro.scheduler.gang_placement = variant.gang_placement;
    ro.scheduler.backfill_reservation = variant.backfill_reservation;
    ro.scheduler.elastic = variant.elastic;
    ro.scheduler.gpu_model_choice = variant.gpu_model_choice;
    ro.elastic_scaling = options.elastic_scaling;
    ro.seed = options.seed;
    ro.max_attempts_after_block = options.max_attempts_after_block;
    if (!options.spread_slowdown.empty()) ro.spread_slowdown = options.spread_slowdown;
    auto result = RunReplay(cluster, jobs, ro);
    if (!result) return std::unexpected(result.error());

    TopologyExperimentRow row;
    row.gang_placement = gangs;
    row.wall_seconds = result->wall_seconds;
    row.resizes = result->resizes;
    row.makespan_s = ToSeconds(result->last_finish - result->first_submit);
    row.gpu_allocation = result->capacity_gpu_seconds > 0
                             ? result->allocated_gpu_seconds / result->capacity_gpu_seconds
                             : 0;
    for (const auto& c : kClasses) {
      TopologyClassStats st;
      st.name = c.name;
      std::vector<double> jct, queue;
      double slowdown = 0, inner = 0, min_inner = 0, speed = 0;
      std::int64_t prefer_ok = 0, require_ok = 0, slowed = 0;
      for (std::size_t i = 0; i < jobs.size(); ++i) {
        const Workload& w = jobs[i];
        const auto& o = result->jobs[i];
        const std::int64_t gpus = w.TotalGpuMilli() / kMilliPerGpu;
        if (gpus < c.min_gpus || gpus > c.max_gpus) continue;
        ++st.jobs;
        if (o.unschedulable && c.max_gpus == INT64_MAX && c.min_gpus == 0) ++row.unschedulable;
        if (o.first_start < 0) continue;
        ++st.started;
        const int span = SpanNumber(topology, o.span);
        if (!w.topology.prefer.empty()) {
          ++st.with_prefer;
          prefer_ok += span >= LevelNumber(topology, w.topology.prefer).value_or(kClusterLevel);
        }
        if (!w.topology.require.empty()) {
          ++st.with_require;
          require_ok += span >= LevelNumber(topology, w.topology.require).value_or(kClusterLevel);
        }
        slowdown += o.slowdown;
        speed += o.gpu_speed;
        slowed += o.slowdown > 1.0;
        inner += o.inner_domains;
        if (inner_gpus > 0) {
          min_inner += static_cast<double>((gpus + inner_gpus - 1) / inner_gpus);
        }
        queue.push_back(ToSeconds(o.first_start - o.submit));
        if (o.finish >= 0) jct.push_back(ToSeconds(o.finish - o.submit));
      }
      if (st.started > 0) {
        const auto n = static_cast<double>(st.started);
        st.mean_slowdown = slowdown / n;
        st.slowed = static_cast<double>(slowed) / n;
        st.mean_inner_domains = inner / n;
        st.mean_min_inner_domains = min_inner / n;
        double q = 0;
        for (double x : queue) q += x;
        st.queue_mean_s = q / n;
        st.queue_p95_s = Percentile(queue, 95);
        st.mean_gpu_speed = speed / n;
      }
      if (st.with_prefer > 0) st.within_preferred = static_cast<double>(prefer_ok) / st.with_prefer;
      if (st.with_require > 0)
        st.within_required = static_cast<double>(require_ok) / st.with_require;
      if (!jct.empty()) {
        double s = 0;
        for (double x : jct) s += x;
        st.jct_mean_s = s / static_cast<double>(jct.size());
        st.jct_p50_s = Percentile(jct, 50);
        st.jct_p95_s = Percentile(jct, 95);
      }
      row.classes.push_back(std::move(st));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

nlohmann::json TopologyExperimentJson(const TopologyExperimentOptions& options,
                                      const std::vector<TopologyExperimentRow>& rows) {
  nlohmann::json j;
  j["queue_policy"] = options.queue_policy;
  j["placement_policy"] = options.placement_policy;
  j["seed"] = options.seed;
  j["max_attempts_after_block"] = options.max_attempts_after_block;
  const auto slowdown =
      options.spread_slowdown.empty() ? ReplayOptions{}.spread_slowdown : options.spread_slowdown;
  for (const auto& [level, factor] : slowdown) j["spread_slowdown"][level] = factor;
  for (const auto& r : rows) {
    nlohmann::json row;
    row["gang_placement"] = r.gang_placement;
    row["makespan_seconds"] = r.makespan_s;
    row["gpu_allocation_ratio"] = r.gpu_allocation;
    row["unschedulable"] = r.unschedulable;
    row["wall_seconds"] = r.wall_seconds;
    row["resizes"] = r.resizes;
    for (const auto& c : r.classes) {
      row["classes"].push_back({{"class", c.name},
                                {"jobs", c.jobs},
                                {"started", c.started},
                                {"with_prefer", c.with_prefer},
                                {"within_preferred", c.within_preferred},
                                {"with_require", c.with_require},
                                {"within_required", c.within_required},
                                {"mean_slowdown", c.mean_slowdown},
                                {"slowed_share", c.slowed},
                                {"mean_leaves", c.mean_inner_domains},
                                {"mean_min_leaves", c.mean_min_inner_domains},
                                {"jct_mean_seconds", c.jct_mean_s},
                                {"jct_p50_seconds", c.jct_p50_s},
                                {"jct_p95_seconds", c.jct_p95_s},
                                {"queue_mean_seconds", c.queue_mean_s},
                                {"queue_p95_seconds", c.queue_p95_s},
                                {"mean_gpu_speed", c.mean_gpu_speed}});
    }
    j["results"].push_back(std::move(row));
  }
  return j;
}

}  // namespace tessera
