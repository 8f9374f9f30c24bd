#include "sim/replay_simulation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <set>
#include <tuple>
#include <variant>

#include "core/cluster_state.h"
#include "core/rng.h"
#include "sched/elastic/elastic_resize.h"
#include "sched/placement/gpu_model_speed.h"
#include "sched/placement/task_placer.h"
#include "sched/placement/topology_gang_placer.h"
#include "sched/queue/queue_order.h"
#include "sim/event_queue.h"
#include "sim/queue_file.h"
#include "sim/stats.h"

namespace tessera {

namespace {

struct Arrival {
  std::size_t job;
};
struct Completion {
  std::size_t job;
  std::uint64_t epoch;
};
struct Reorder {};
struct NodeDies {
  NodeId node;
};
struct FailureDetected {
  NodeId node;
  Tick failed_at = 0;
};
struct NodeRepaired {
  NodeId node;
};
struct CycleAt {
  std::uint64_t seed;
};
using Event =
    std::variant<Arrival, Completion, Reorder, NodeDies, FailureDetected, NodeRepaired, CycleAt>;

enum class Phase { kFuture, kPending, kRunning, kDone, kUnschedulable };

struct JobRun {
  Phase phase = Phase::kFuture;
  Tick remaining = 0;  // run time left at full size
  Tick started = 0;
  double attained_gpu_seconds = 0;
  std::uint64_t epoch = 0;  // bumped on preemption; stale completions are ignored
  Placement placement;
  double slowdown = 1.0;  // of the current run: wall time = remaining × slowdown
};

// Wall time of `work` (run time at full speed) at `slowdown`; exact when there is none.
Tick Stretch(Tick work, double slowdown) {
  return slowdown == 1.0 ? work
                         : static_cast<Tick>(std::llround(static_cast<double>(work) * slowdown));
}
// Work done in `wall` time at `slowdown`.
Tick Shrink(Tick wall, double slowdown) {
  return slowdown == 1.0 ? wall
                         : static_cast<Tick>(std::llround(static_cast<double>(wall) / slowdown));
}

int InnerDomains(const Cluster& cluster, const Placement& p) {
  const auto levels = cluster.topology().levels.size();
  if (levels == 0) return 0;
  std::set<std::uint32_t> domains;
  for (const auto& t : p) {
    const auto& d = cluster.node(t.node).domain;
    if (d.size() >= levels) domains.insert(d[levels - 1]);
  }
  return static_cast<int>(domains.size());
}

std::string NodesOf(const Cluster& cluster, const Placement& p) {
  std::string s;
  for (const auto& t : p) {
    if (!s.empty()) s += ",";
    s += cluster.node(t.node).name;
  }
  return s;
}

}  // namespace

Result<ReplayResult> RunReplay(const Cluster& cluster, const std::vector<Workload>& jobs,
                               const ReplayOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  // The queue tree: the caller's, or one queue per user with equal shares. Fair-share policies
  // schedule by it; every policy is measured against it.
  SchedulerConfig config = options.scheduler;
  if (!config.queues) {
    config.queues = std::make_shared<const QueueTree>(QueuePerUser(jobs, ClusterCapacity(cluster)));
  }
  const QueueTree& tree = *config.queues;
  // Each job's draws are seeded by the run's seed and the job, as the controller's (seed 0).
  config.placement.draw_seed = options.seed;
  if (options.checkpoint_interval < 0) {
    return InvalidArgument("replay: checkpoint_interval: must be >= 0");
  }
  auto scheduler = Scheduler::Create(config);
  if (!scheduler) return std::unexpected(scheduler.error());
  if (!(options.elastic_scaling > 0) || !(options.elastic_scaling <= 1)) {
    return InvalidArgument("replay: elastic_scaling: must be in (0, 1]");
  }
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].id != JobId(static_cast<std::uint32_t>(i))) {
      return InvalidArgument("replay: job " + std::to_string(i) + " has id " +
                             std::to_string(jobs[i].id.value));
    }
  }
  for (const auto& [level, factor] : options.spread_slowdown) {
    if (!(factor > 0) || !std::isfinite(factor)) {
      return InvalidArgument("replay: spread_slowdown[" + level + "]: must be a positive number");
    }
  }
  // The slowdown of a placement: the factor of the level it spans, when that is wider than the
  // level the job prefers.
  const Topology& topology = cluster.topology();
  auto slowdown_of = [&](const Workload& w, const Placement& p) {
    if (w.topology.prefer.empty()) return 1.0;
    const std::optional<int> prefer = LevelNumber(topology, w.topology.prefer);
    const int span = SpanLevel(cluster, p);
    if (!prefer || span >= *prefer) return 1.0;
    const std::string name = LevelName(topology, span);
    for (const auto& [level, factor] : options.spread_slowdown) {
      if (level == name) return factor;
    }
    return 1.0;
  };

  // Progress rate of an elastic job at the size of `p`, relative to its nominal size.
  auto elastic_rate = [&](const Workload& w, const Placement& p) {
    if (!IsElastic(w) || p.empty()) return 1.0;
    const double ratio = static_cast<double>(p.size()) / w.groups[0].count;
    return options.elastic_scaling == 1.0 ? ratio : std::pow(ratio, options.elastic_scaling);
  };

  ReplayResult result;
  result.policy = options.scheduler.queue_policy;
  result.placement = options.scheduler.placement_policy;
  result.oracle = scheduler->queue_policy().oracle();
  result.jobs.resize(jobs.size());
  std::vector<JobRun> runs(jobs.size());
  EventQueue<Event> events;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const auto& w = jobs[i];
    auto& o = result.jobs[i];
    o.id = w.id;
    o.name = w.name;
    o.queue = w.queue;
    o.kind = std::string(KindName(w.kind));
    o.gpus = static_cast<double>(w.TotalGpuMilli()) / kMilliPerGpu;
    o.submit = w.submit;
    runs[i].remaining = std::max<Tick>(w.duration, 0);
    events.Push(w.submit, Arrival{i});
  }
  for (const NodeFailure& f : options.node_failures) {
    if (f.node.value >= static_cast<std::uint32_t>(cluster.node_count()) || f.time < 0 ||
        options.failure_detect < 0) {
      return InvalidArgument("replay: node_failures: node " + std::to_string(f.node.value) +
                             " at " + std::to_string(f.time) + " ms is not a node of the cluster");
    }
    events.Push(f.time, NodeDies{f.node});
    events.Push(f.time + options.failure_detect, FailureDetected{f.node, f.time});
    if (f.repair < kNever && f.repair > options.failure_detect)
      events.Push(f.time + f.repair, NodeRepaired{f.node});
  }
  for (const RecordedCycle& c : options.cycles) events.Push(c.time, CycleAt{c.seed});
  result.first_submit = jobs.empty() ? 0 : kNever;
  for (const auto& w : jobs) result.first_submit = std::min(result.first_submit, w.submit);
  result.checkpoint_interval = options.checkpoint_interval;
  QueueShareMeter meter(tree, jobs, result.first_submit);
  auto interval_of = [&](std::size_t j) {
    return jobs[j].checkpoint_interval > 0 ? jobs[j].checkpoint_interval
                                           : options.checkpoint_interval;
  };
  // Wall time from the start of the current run to its last checkpoint at `now`; with no
  // interval every moment is a checkpoint (nothing is lost).
  auto saved_wall = [&](std::size_t j, Tick started, Tick now) {
    const Tick interval = interval_of(j);
    return interval > 0 ? LastCheckpointAt(started, now, interval) - started : now - started;
  };
  ClusterState state(cluster);
  // Nodes dead and not yet detected: they still take work, but nothing of a job with a task
  // there ends (its process there is gone) until the detection restarts it.
  std::set<std::uint32_t> dead;
  auto touches_dead = [&](const Placement& p) {
    return std::any_of(p.begin(), p.end(),
                       [&](const TaskPlacement& t) { return dead.contains(t.node.value); });
  };
  std::vector<std::size_t> active;  // pending or running, by job index
  // Pending jobs are kept in the queue policy's order (their keys do not change while they
  // wait), so each cycle hands the scheduler a sorted queue instead of re-sorting it; the
  // controller keeps its queue the same way (server/pending_queue.h).
  std::vector<JobView> views(jobs.size());
  std::vector<const JobView*> pending_sorted;
  auto queue_order = [&](const JobView* a, const JobView* b) {
    return QueueOrderBefore(scheduler->queue_policy(), *a, *b, 0);
  };
  auto enqueue = [&](std::size_t j) {
    JobView& v = views[j];
    v = JobView{};
    v.job = &jobs[j];
    v.phase = JobPhase::kPending;
    v.attained_gpu_seconds = runs[j].attained_gpu_seconds;
    v.remaining = runs[j].remaining;
    auto at = std::upper_bound(pending_sorted.begin(), pending_sorted.end(), &v, queue_order);
    pending_sorted.insert(at, &v);
  };
  std::vector<std::pair<double, double>> gpu_series, queue_series;
  Tick last_time = result.first_submit;
  Tick queued_reorder = kNever;
  std::uint64_t cycle = 0;
  auto log = [&](Tick t, const std::string& what) {
    if (options.record_events) result.events.push_back(std::to_string(t) + " " + what);
  };

  while (!events.empty()) {
    const Tick now = events.top().time;
    result.allocated_gpu_seconds += static_cast<double>(state.allocated_gpu_milli()) /
                                    kMilliPerGpu * ToSeconds(now - last_time);
    last_time = now;
    meter.Advance(now);
    // Everything that happens at this instant, then one scheduling cycle.
    std::optional<std::uint64_t> recorded_seed;  // a recorded cycle's at this instant
    while (!events.empty() && events.top().time == now) {
      auto e = events.Pop();
      ++result.event_count;
      if (const auto* at = std::get_if<CycleAt>(&e.payload)) {
        recorded_seed = at->seed;
      } else if (const auto* a = std::get_if<Arrival>(&e.payload)) {
        const auto& w = jobs[a->job];
        if (auto why = NeverFitsReason(cluster, w)) {
          runs[a->job].phase = Phase::kUnschedulable;
          result.jobs[a->job].unschedulable = true;
          result.jobs[a->job].reason = *why;
          log(now, "unschedulable " + w.name + ": " + *why);
          continue;
        }
        runs[a->job].phase = Phase::kPending;
        meter.Demand(a->job, +1);
        active.push_back(a->job);
        enqueue(a->job);
        log(now, "arrive " + w.name);
      } else if (const auto* c = std::get_if<Completion>(&e.payload)) {
        auto& r = runs[c->job];
        if (r.phase != Phase::kRunning || r.epoch != c->epoch) continue;  // preempted since
        if (touches_dead(r.placement)) continue;  // it cannot end: the detection restarts it
        state.Release(r.placement);
        r.attained_gpu_seconds += GpuMilliOf(r.placement) / 1000.0 * ToSeconds(now - r.started);
        r.phase = Phase::kDone;
        r.placement.clear();
        meter.Hold(c->job, -1);
        meter.Demand(c->job, -1);
        result.jobs[c->job].finish = now;
        result.last_finish = std::max(result.last_finish, now);
        log(now, "finish " + jobs[c->job].name);
      } else if (const auto* d = std::get_if<NodeDies>(&e.payload)) {
        dead.insert(d->node.value);
        log(now, "node " + cluster.node(d->node).name + " dies");
      } else if (const auto* f = std::get_if<FailureDetected>(&e.payload)) {
        // Every job with a task there is stopped and queued again (requeue recovery). Its rank 0
        // checkpoints on SIGTERM, as the contract of docs/training-jobs.md asks, unless it died
        // with the node: then the job keeps only its last periodic checkpoint before the
        // failure (none without an interval: the run is lost).
        for (std::size_t j : active) {
          auto& r = runs[j];
          const bool hit = std::any_of(r.placement.begin(), r.placement.end(),
                                       [&](const TaskPlacement& t) { return t.node == f->node; });
          if (r.phase != Phase::kRunning || !hit) continue;
          const Tick ran = now - r.started;
          const bool writer_lost = r.placement.front().node == f->node;
          const Tick before = std::max(r.started, f->failed_at);
          const Tick saved = !writer_lost ? ran
                             : interval_of(j) > 0
                                 ? LastCheckpointAt(r.started, before, interval_of(j)) - r.started
                                 : 0;
          r.remaining = std::max<Tick>(0, r.remaining - Shrink(saved, r.slowdown));
          const double gpus_now = GpuMilliOf(r.placement) / 1000.0;
          r.attained_gpu_seconds += gpus_now * ToSeconds(ran);
          state.Release(r.placement);
          meter.Hold(j, -1);
          r.phase = Phase::kPending;
          r.placement.clear();
          ++r.epoch;
          enqueue(j);
          ++result.jobs[j].recoveries;
          ++result.recoveries;
          log(now, "recover " + jobs[j].name + " (node " + cluster.node(f->node).name + " lost)");
        }
        state.SetHealthy(f->node, false);
        dead.erase(f->node.value);
      } else if (const auto* rep = std::get_if<NodeRepaired>(&e.payload)) {
        state.SetHealthy(rep->node, true);
      } else {
        queued_reorder = kNever;
      }
    }
    std::erase_if(active, [&](std::size_t j) { return runs[j].phase == Phase::kDone; });
    auto sample = [&] {
      std::size_t pending = 0;
      for (std::size_t j : active) pending += runs[j].phase == Phase::kPending;
      const double t = ToSeconds(now - result.first_submit);
      const double gpus = static_cast<double>(state.allocated_gpu_milli()) / kMilliPerGpu;
      if (gpu_series.empty() || gpu_series.back().second != gpus) gpu_series.emplace_back(t, gpus);
      const auto q = static_cast<double>(pending);
      if (queue_series.empty() || queue_series.back().second != q) queue_series.emplace_back(t, q);
    };
    if (active.empty() || (!options.cycles.empty() && !recorded_seed)) {
      sample();
      continue;
    }

    Snapshot snap;
    snap.now = now;
    snap.seed = recorded_seed ? *recorded_seed : Rng::Mix(options.seed, ++cycle);
    if (options.presorted_queue) {
      snap.pending_in_order = &pending_sorted;
    } else {
      for (const JobView* v : pending_sorted) snap.jobs.push_back(*v);
    }
    snap.max_attempts_after_block = options.max_attempts_after_block;
    for (std::size_t j : active) {
      const auto& r = runs[j];
      if (r.phase != Phase::kRunning) continue;
      JobView v;
      v.job = &jobs[j];
      v.phase = JobPhase::kRunning;
      v.started = r.started;
      v.attained_gpu_seconds = r.attained_gpu_seconds;
      v.remaining = Stretch(r.remaining, r.slowdown) - (now - r.started);
      v.last_checkpoint = r.started + saved_wall(j, r.started, now);
      v.placement = r.placement;
      snap.jobs.push_back(std::move(v));
    }
    const Decisions decisions = scheduler->Schedule(snap, state);
    ++result.schedule_calls;
    bool started_any = false;
    for (const auto& d : decisions) {
      const std::size_t j = d.job.value;
      auto& r = runs[j];
      auto& o = result.jobs[j];
      if (options.record_decisions && d.kind != Decision::Kind::kUnschedulable)
        result.decisions.push_back({now, j, d.kind, d.placement, d.preemptor});
      if (d.kind == Decision::Kind::kPreempt) {
        // The scheduler already gave the GPUs back in `state`. The job resumes from its last
        // checkpoint: the work since then is lost.
        const Tick ran = now - r.started;
        const Tick saved = saved_wall(j, r.started, now);
        r.remaining =
            std::max<Tick>(0, r.remaining - Shrink(saved, r.slowdown)) + options.restart_cost;
        const double gpus_now = GpuMilliOf(r.placement) / 1000.0;  // elastic: its size now
        r.attained_gpu_seconds += gpus_now * ToSeconds(ran);
        meter.Hold(j, -1);
        r.phase = Phase::kPending;
        r.placement.clear();
        ++r.epoch;
        enqueue(j);
        ++o.preemptions;
        ++result.preemptions;
        const double lost = gpus_now * ToSeconds(ran - saved + options.restart_cost);
        o.gpu_seconds_lost += lost;
        result.gpu_seconds_lost += lost;
        log(now, "preempt " + jobs[j].name);
      } else if (d.kind == Decision::Kind::kResize) {
        // The scheduler already took or gave back the GPUs in `state`. Work done so far at the
        // old size counts; the rest runs at the new size.
        r.remaining = std::max<Tick>(0, r.remaining - Shrink(now - r.started, r.slowdown));
        r.attained_gpu_seconds += GpuMilliOf(r.placement) / 1000.0 * ToSeconds(now - r.started);
        r.started = now;
        r.placement = d.placement;
        o.slowdown = slowdown_of(jobs[j], r.placement);
        r.slowdown = o.slowdown / PlacementSpeed(cluster, jobs[j], r.placement) /
                     elastic_rate(jobs[j], r.placement);
        if (options.measured_run_times) r.slowdown = 1.0;
        ++r.epoch;
        ++o.resizes;
        ++result.resizes;
        events.Push(now + Stretch(r.remaining, r.slowdown), Completion{j, r.epoch});
        log(now, "resize " + jobs[j].name + " to " + std::to_string(r.placement.size()) +
                     " workers on " + NodesOf(cluster, d.placement));
      } else if (d.kind == Decision::Kind::kBind) {
        started_any = true;
        r.phase = Phase::kRunning;
        r.started = now;
        r.placement = d.placement;
        // Spread wider than preferred, on a slower GPU model than the job's reference, and
        // with fewer (or more) workers than its nominal size.
        const double speed = PlacementSpeed(cluster, jobs[j], r.placement);
        o.slowdown = slowdown_of(jobs[j], r.placement);
        r.slowdown = o.slowdown / speed / elastic_rate(jobs[j], r.placement);
        if (options.measured_run_times) r.slowdown = 1.0;
        o.gpu_speed = speed;
        meter.Hold(j, +1);
        o.span = LevelName(topology, SpanLevel(cluster, r.placement));
        o.inner_domains = InnerDomains(cluster, r.placement);
        o.slowdown = slowdown_of(jobs[j], r.placement);  // the spread alone
        if (o.first_start < 0) o.first_start = now;
        events.Push(now + Stretch(r.remaining, r.slowdown), Completion{j, r.epoch});
        log(now, "start " + jobs[j].name + " on " + NodesOf(cluster, d.placement));
      }
    }
    if (started_any) {
      std::erase_if(pending_sorted, [&](const JobView* v) {
        return runs[v->job->id.value].phase != Phase::kPending;
      });
    }
    sample();

    // The queue order may change with no event (LAS thresholds): wake up then.
    snap.jobs.clear();
    for (std::size_t j : active) {
      if (runs[j].phase != Phase::kRunning) continue;
      JobView v;
      v.job = &jobs[j];
      v.phase = JobPhase::kRunning;
      v.started = runs[j].started;
      v.attained_gpu_seconds = runs[j].attained_gpu_seconds;
      snap.jobs.push_back(std::move(v));
    }
    const Tick next = scheduler->NextReorderTime(snap);
    if (next < kNever && next > now && next < queued_reorder) {
      events.Push(next, Reorder{});
      queued_reorder = next;
    }
  }
  result.capacity_gpu_seconds =
      static_cast<double>(cluster.total_gpus()) *
      ToSeconds(std::max<Tick>(0, result.last_finish - result.first_submit));
  result.gpus_allocated = Downsample(gpu_series, options.series_points);
  result.queues = meter.Result(std::min<std::size_t>(options.series_points, 200));
  result.queue_length = Downsample(queue_series, options.series_points);
  result.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

}  // namespace tessera
