#include "sim/colocation_experiment.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <numbers>
#include <optional>
#include <stdexcept>

#include "core/cluster_state.h"
#include "core/rng.h"
#include "sched/autoscale/autoscaler.h"
#include "sched/colocation/oversell.h"
#include "sched/scheduler.h"
#include "sim/stats.h"

namespace tessera {

namespace {

constexpr int kOnlinePriority = 100;
// Offline tasks the queue tries after one could not start, per cycle (Slurm's bf_max_job_test).
constexpr std::size_t kAttemptsAfterBlock = 64;

using Service = ColocationService;
using OfflineSpec = ColocationOfflineTask;
using Workloads = ColocationWorkload;

// True when some node of `cluster` could hold one task of `shape` when empty.
bool FitsSomewhere(const Cluster& cluster, const TaskShape& shape,
                   const std::vector<std::string>& models) {
  const GpuModelSet allowed = cluster.models().Resolve(models);
  for (const Node& n : cluster.nodes()) {
    if (n.gpu_count >= shape.gpus && allowed.Contains(n.gpu_model) &&
        n.capacity.cpu_milli >= shape.cpu_milli && n.capacity.memory_mib >= shape.memory_mib) {
      return true;
    }
  }
  return false;
}

TaskShape ShapeOf(const TraceJob& p) {
  return TaskShape{p.cpu_milli, p.memory_mib, p.gpus, p.gpu_milli};
}

double GpuMilliOf(const TaskShape& s) { return static_cast<double>(s.gpus) * s.gpu_milli; }

// The last service drawn gets no more replicas than the fleet's GPU target still needs, so that
// the fleet overshoots its target by less than one replica.
int CappedReplicas(int drawn, const TaskShape& shape, double milli_left) {
  const int needed = static_cast<int>(std::ceil(milli_left / GpuMilliOf(shape)));
  return std::clamp(needed, 1, drawn);
}

// Poisson arrivals of offline tasks drawn from `draw` until the horizon; `mean_gpu_seconds` is
// the mean GPU-time of what `draw` gives.
template <typename Draw>
void OfflineStream(const Cluster& cluster, const ColocationOptions& o, double mean_gpu_seconds,
                   Rng& rng, Draw draw, Workloads& w) {
  if (o.offline_load <= 0 || mean_gpu_seconds <= 0) return;
  const double rate_per_second =
      o.offline_load * static_cast<double>(cluster.total_gpus()) / mean_gpu_seconds;
  double t = -ToSeconds(o.warmup);
  const double horizon = ToSeconds(o.horizon);
  while (true) {
    t += -std::log(1 - rng.Real()) / rate_per_second;
    if (t >= horizon) break;
    OfflineSpec s = draw();
    s.submit = FromSeconds(t);
    w.offline.push_back(std::move(s));
  }
  w.offline_mean_gpu_seconds = mean_gpu_seconds;
}

// openb: LS pods (with GPUs) are services, BE pods offline tasks; both drawn with repetition.
Result<Workloads> OpenbWorkloads(const Cluster& cluster, const std::vector<TraceJob>& pods,
                                 const ColocationOptions& o, Rng& rng) {
  std::vector<const TraceJob*> ls, be;
  for (const TraceJob& p : pods) {
    if (p.gpus <= 0 || p.gpu_milli <= 0) continue;
    if (!FitsSomewhere(cluster, ShapeOf(p), p.gpu_models)) continue;
    if (p.qos == "LS") ls.push_back(&p);
    if (p.qos == "BE") be.push_back(&p);
  }
  if (ls.empty())
    return InvalidArgument("openb: the trace has no LS pod with GPUs that fits the cluster");
  if (be.empty())
    return InvalidArgument("openb: the trace has no BE pod with GPUs that fits the cluster");
  Workloads w;
  const double target = o.online_share * static_cast<double>(cluster.total_gpus()) * kMilliPerGpu;
  while (w.online_peak_milli < target) {
    const TraceJob& p = *ls[rng.Uniform(ls.size())];
    Service s;
    s.shape = ShapeOf(p);
    s.models = p.gpu_models;
    s.max_replicas =
        CappedReplicas(1 + static_cast<int>(rng.Uniform(4)), s.shape, target - w.online_peak_milli);
    s.phase_hours = (2 * rng.Real() - 1) * o.phase_hours;
    s.queue = p.id;
    w.online_peak_milli += s.max_replicas * GpuMilliOf(s.shape);
    w.services.push_back(std::move(s));
  }
  // BE run times from the trace, clamped to [10 min, 6 h]: the trace's pods are mostly
  // seconds long (median 256 s), shorter than a batch shard worth scheduling.
  auto duration_of = [](const TraceJob& p) {
    return std::clamp<Tick>(p.duration, 10 * kMinute, 360 * kMinute);
  };
  double mean = 0;
  for (const TraceJob* p : be)
    mean += GpuMilliOf(ShapeOf(*p)) / kMilliPerGpu * ToSeconds(duration_of(*p));
  mean /= static_cast<double>(be.size());
  OfflineStream(
      cluster, o, mean, rng,
      [&] {
        const TraceJob& p = *be[rng.Uniform(be.size())];
        return OfflineSpec{ShapeOf(p), p.gpu_models, 0, duration_of(p)};
      },
      w);
  return w;
}

// fleet: LLM serving replicas of 1, 2, 4 or 8 whole GPUs, 2–16 replicas each, in 20 teams;
// offline batch inference tasks of one GPU (50%), half (25%) or a quarter of one (25%), run times
// exponential with a 60 min mean, clamped to [5 min, 6 h]. CPU and memory per GPU: half the
// scarcest node's.
Result<Workloads> FleetWorkloads(const Cluster& cluster, const ColocationOptions& o, Rng& rng) {
  std::int64_t cpu_per_gpu = 0, mem_per_gpu = 0;
  int max_gpus = 0;
  for (const Node& n : cluster.nodes()) {
    if (n.gpu_count == 0) continue;
    const std::int64_t c = n.capacity.cpu_milli / n.gpu_count / 2;
    const std::int64_t m = n.capacity.memory_mib / n.gpu_count / 2;
    cpu_per_gpu = cpu_per_gpu == 0 ? c : std::min(cpu_per_gpu, c);
    mem_per_gpu = mem_per_gpu == 0 ? m : std::min(mem_per_gpu, m);
    max_gpus = std::max(max_gpus, n.gpu_count);
  }
  if (max_gpus == 0) return InvalidArgument("fleet: the cluster has no GPUs");
  Workloads w;
  const double target = o.online_share * static_cast<double>(cluster.total_gpus()) * kMilliPerGpu;
  const std::array<int, 4> sizes = {1, 2, 4, 8};
  const std::array<double, 4> weights = {0.35, 0.25, 0.25, 0.15};
  while (w.online_peak_milli < target) {
    double u = rng.Real();
    int gpus = sizes.back();
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      if (u < weights[i]) {
        gpus = sizes[i];
        break;
      }
      u -= weights[i];
    }
    gpus = std::min(gpus, max_gpus);
    Service s;
    s.shape = TaskShape{cpu_per_gpu * gpus, mem_per_gpu * gpus, gpus, kMilliPerGpu};
    s.max_replicas = CappedReplicas(2 + static_cast<int>(rng.Uniform(15)), s.shape,
                                    target - w.online_peak_milli);
    s.phase_hours = (2 * rng.Real() - 1) * o.phase_hours;
    s.queue = "team-" + std::to_string(w.services.size() % 20);
    w.online_peak_milli += s.max_replicas * GpuMilliOf(s.shape);
    w.services.push_back(std::move(s));
  }
  // Mean GPU-time of a task: (0.5 × 1 + 0.25 × 0.5 + 0.25 × 0.25) GPUs × the mean clamped run time,
  // E[clamp(X, lo, hi)] = lo + mean × (e^(−lo/mean) − e^(−hi/mean)) for exponential X.
  const double lo = 300, hi = 21600, mean_s = 3600;
  const double clamped_mean = lo + mean_s * (std::exp(-lo / mean_s) - std::exp(-hi / mean_s));
  OfflineStream(
      cluster, o, (0.5 + 0.25 * 0.5 + 0.25 * 0.25) * clamped_mean, rng,
      [&] {
        const double pick = rng.Real();
        const double d = std::clamp(-std::log(1 - rng.Real()) * mean_s, lo, hi);
        const int milli = pick < 0.5 ? 1000 : pick < 0.75 ? 500 : 250;
        return OfflineSpec{
            TaskShape{cpu_per_gpu * milli / 1000, mem_per_gpu * milli / 1000, 1, milli},
            {},
            0,
            FromSeconds(d)};
      },
      w);
  return w;
}

// Each service's load in every step of the warm-up and the horizon:
// min(1, D(hour + phase) × B(minute)), B the load trace's factor of the minute (repeated).
void FillLoads(const ColocationOptions& o, Workloads& w) {
  w.loads.assign(w.services.size(), {});
  for (Tick t = -o.warmup; t < o.horizon; t += o.step) {
    const double hour = ToSeconds(t) / 3600;
    const double burst =
        o.burst.empty()
            ? 1.0
            : o.burst[static_cast<std::size_t>((t + o.warmup) / kMinute) % o.burst.size()];
    for (std::size_t s = 0; s < w.services.size(); ++s) {
      w.loads[s].push_back(std::min(
          1.0, DiurnalLoad(hour + w.services[s].phase_hours, o.trough, o.peak_hour) * burst));
    }
  }
}

std::string ModeName(ColocationSetup::Mode m) {
  switch (m) {
    case ColocationSetup::Mode::kDedicated:
      return "dedicated";
    case ColocationSetup::Mode::kShared:
      return "shared";
    case ColocationSetup::Mode::kColocate:
      return "colocate";
  }
  return "";
}

enum class Phase { kPending, kRunning, kDone, kGone };

struct Job {
  Workload w;
  int pool = 0;
  bool online = false;
  int service = -1;
  Tick duration = 0;   // offline: run time at full speed
  Tick remaining = 0;  // offline: left in this run (a run starts afresh after an eviction)
  Phase phase = Phase::kPending;
  Placement placement;
  Tick started = 0;
  Tick first_start = -1;
  bool oversold = false;
};

struct Pool {
  std::unique_ptr<Cluster> owned;  // dedicated pools
  const Cluster* cluster = nullptr;
  std::unique_ptr<ClusterState> state;
  std::optional<Scheduler> scheduler;
  std::vector<std::size_t> running;  // job indices
  std::vector<std::size_t> pending;
};

// The dedicated split: of each GPU model's nodes (in id order), the first
// ceil(min(1, 1.15 × online_share) × count) go to the online pool, the rest to offline.
// With `online_models`, the nodes of those models are the online pool, the others offline.
Result<std::pair<std::unique_ptr<Cluster>, std::unique_ptr<Cluster>>> SplitCluster(
    const Cluster& cluster, double online_share, const std::vector<std::string>& online_models) {
  const double frac = std::min(1.0, 1.15 * online_share);
  std::map<GpuModelId, std::vector<const Node*>> by_model;
  for (const Node& n : cluster.nodes()) by_model[n.gpu_model].push_back(&n);
  auto online = std::make_unique<Cluster>();
  auto offline = std::make_unique<Cluster>();
  online->set_topology(cluster.topology());
  offline->set_topology(cluster.topology());
  for (const auto& [model, nodes] : by_model) {
    const auto take = static_cast<std::size_t>(std::ceil(frac * static_cast<double>(nodes.size())));
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const Node& n = *nodes[i];
      const bool is_online =
          online_models.empty()
              ? i < take
              : std::find(online_models.begin(), online_models.end(),
                          cluster.models().Name(n.gpu_model)) != online_models.end();
      Cluster& to = is_online ? *online : *offline;
      auto id = to.AddNode(n.name, cluster.models().Name(n.gpu_model), n.gpu_count,
                           n.capacity.cpu_milli, n.capacity.memory_mib, n.domain);
      if (!id) return std::unexpected(id.error());
    }
  }
  return std::make_pair(std::move(online), std::move(offline));
}

Result<ColocationRun> RunSetup(const Cluster& cluster, const Workloads& wl,
                               const ColocationOptions& o, const ColocationSetup& setup) {
  const auto wall_start = std::chrono::steady_clock::now();
  ColocationRun run;
  run.name = setup.name;
  run.mode = ModeName(setup.mode);
  run.oversell = setup.mode == ColocationSetup::Mode::kColocate
                     ? setup.colocation.oversell_permille / 1000.0
                     : 0.0;
  SchedulerConfig sc;
  sc.queue_policy = "backfill";
  sc.placement_policy = o.placement;
  sc.placement.draw_seed = o.seed;
  if (setup.mode == ColocationSetup::Mode::kColocate) {
    sc.colocation = setup.colocation;
    sc.colocation.enabled = true;
  }
  // Which workload kinds are online: the setup's, so that a config moving kinds changes both.
  const ColocationConfig& classes = setup.colocation;
  const bool online_kind_is_inference =
      ClassOf(classes, WorkloadKind::kInference) == CoClass::kOnline;
  const bool offline_kind_is_batch = ClassOf(classes, WorkloadKind::kBatch) == CoClass::kOffline;
  if (!online_kind_is_inference || !offline_kind_is_batch) {
    return InvalidArgument(setup.name +
                           ": the experiment's services are InferenceService and its tasks "
                           "BatchJob; the config must class them online and offline");
  }

  std::vector<Pool> pools;
  if (setup.mode == ColocationSetup::Mode::kDedicated) {
    auto split = SplitCluster(
        cluster, wl.online_peak_milli / (static_cast<double>(cluster.total_gpus()) * kMilliPerGpu),
        o.dedicated_online_models);
    if (!split) return std::unexpected(split.error());
    pools.resize(2);
    pools[0].owned = std::move(split->first);
    pools[1].owned = std::move(split->second);
    for (auto& p : pools) p.cluster = p.owned.get();
  } else {
    pools.resize(1);
    pools[0].cluster = &cluster;
  }
  for (auto& p : pools) {
    p.state = std::make_unique<ClusterState>(*p.cluster);
    auto s = Scheduler::Create(sc);
    if (!s) return std::unexpected(s.error());
    p.scheduler.emplace(std::move(*s));
  }
  const int online_pool = 0;
  const int offline_pool = static_cast<int>(pools.size()) - 1;

  std::deque<Job> jobs;
  auto add_job = [&](Workload w, int pool) -> std::size_t {
    const std::size_t i = jobs.size();
    w.id = JobId(static_cast<std::uint32_t>(i));
    w.allowed_models = pools[pool].cluster->models().Resolve(w.gpu_models);
    Job j;
    j.w = std::move(w);
    j.pool = pool;
    jobs.push_back(std::move(j));
    pools[pool].pending.push_back(i);
    return i;
  };
  std::vector<std::vector<std::size_t>> replicas(wl.services.size());  // pending or running
  // The stabilisation window in whole steps, as a time (HPA keeps what is newer than it).
  const Tick window = std::max<Tick>(1, o.scale_down_window / o.step) * o.step;
  std::vector<Autoscaler> autoscalers;
  for (const Service& svc : wl.services) {
    AutoscalerConfig config;
    config.spec.policy = o.autoscale_policy;
    config.spec.metric = AutoscaleMetric::kInFlightRequests;  // the demand, in replicas
    config.spec.target = 1;
    config.spec.scale_down_stabilization_seconds = static_cast<int>(window / kSecond);
    config.min_replicas = 1;
    config.max_replicas = svc.max_replicas;
    config.tolerance = 0;
    autoscalers.emplace_back(config);
  }
  std::vector<std::deque<double>> usage_history(wl.services.size());  // replica fractions
  std::vector<double> usage_estimate(wl.services.size(), 1.0);
  const double capacity_milli = static_cast<double>(cluster.total_gpus()) * kMilliPerGpu;
  const double u = o.target_utilisation;
  double demand_sum = 0, served_sum = 0;
  double alloc_sum = 0, online_alloc_sum = 0, offline_alloc_sum = 0, oversold_sum = 0, used_sum = 0;
  double queue_sum = 0;
  std::map<int, std::pair<double, double>> hourly;  // hour → (demand, served)
  std::vector<std::pair<double, double>> alloc_series, slo_series, demand_series;
  std::int64_t steps = 0;
  std::vector<double> load(wl.services.size());
  std::vector<int> running_replicas(wl.services.size());
  std::vector<std::vector<std::array<std::int32_t, kMaxGpusPerNode>>> gpu_use(pools.size());
  for (std::size_t p = 0; p < pools.size(); ++p) gpu_use[p].resize(pools[p].cluster->node_count());

  // The fraction of its request one replica of service s uses: its share of the demand.
  auto replica_fraction = [&](std::size_t s) {
    const int n = running_replicas[s];
    if (n == 0) return 0.0;
    return std::min(1.0, wl.services[s].max_replicas * load[s] * u / n);
  };

  std::size_t next_offline = 0;
  bool counting = false;
  for (Tick t = -o.warmup; t < o.horizon; t += o.step) {
    const bool measured = t >= 0;
    if (measured && !counting) {
      // What the warm-up did is not measured.
      counting = true;
      run.evictions = run.evictions_for_online = run.evictions_for_credit = 0;
      run.offline_gpu_hours_lost = 0;
      run.online_replica_starts = 0;
    }
    // 1. Offline tasks that finished by now.
    for (auto& p : pools) {
      std::erase_if(p.running, [&](std::size_t i) {
        Job& j = jobs[i];
        if (j.online || j.started + j.remaining > t) return false;
        p.state->Release(ChargedPlacement(j.placement, j.oversold));
        j.phase = Phase::kDone;
        if (measured) {
          ++run.offline_tasks_done;
          run.offline_gpu_hours_done += static_cast<double>(j.w.TotalGpuMilli()) / kMilliPerGpu *
                                        ToSeconds(j.duration) / 3600;
          queue_sum += ToSeconds(j.first_start - j.w.submit);
        }
        return true;
      });
    }
    // 2. Offline arrivals.
    while (next_offline < wl.offline.size() && wl.offline[next_offline].submit <= t) {
      const OfflineSpec& spec = wl.offline[next_offline++];
      Workload w;
      w.name = "batch-" + std::to_string(next_offline - 1);
      w.kind = WorkloadKind::kBatch;
      w.queue = "offline";
      w.submit = spec.submit;
      w.duration = spec.duration;
      w.gpu_models = spec.models;
      w.groups.push_back({"task", 1, spec.shape});
      const std::size_t i = add_job(std::move(w), offline_pool);
      jobs[i].duration = jobs[i].remaining = spec.duration;
      run.offline_tasks_submitted += measured ? 1 : 0;
    }
    // 3. Loads now.
    const double hour = ToSeconds(t) / 3600;
    const auto step_index = static_cast<std::size_t>((t + o.warmup) / o.step);
    for (std::size_t s = 0; s < wl.services.size(); ++s) load[s] = wl.loads[s][step_index];
    // 4. The step is served by what runs now. A replica is contended when any of its GPUs holds
    //    more in use than it has (online use plus offline shares, oversold ones included).
    for (std::size_t p = 0; p < pools.size(); ++p) {
      for (auto& g : gpu_use[p]) g.fill(0);
      for (std::size_t i : pools[p].running) {
        const Job& j = jobs[i];
        const std::int32_t use =
            j.online ? static_cast<std::int32_t>(
                           std::lround(replica_fraction(j.service) * j.placement[0].gpu_milli))
                     : j.placement[0].gpu_milli;
        for (const TaskPlacement& tp : j.placement) {
          for (int g = 0; g < kMaxGpusPerNode; ++g) {
            if (tp.gpu_mask & (1u << g))
              gpu_use[p][tp.node.value][g] += j.online ? use : tp.gpu_milli;
          }
        }
      }
    }
    std::vector<int> uncontended(wl.services.size(), 0);
    double used_milli = 0, online_milli = 0, offline_milli = 0, oversold_milli = 0;
    std::int64_t online_running = 0;
    for (std::size_t p = 0; p < pools.size(); ++p) {
      for (std::size_t i : pools[p].running) {
        const Job& j = jobs[i];
        const double held = static_cast<double>(j.w.TotalGpuMilli());
        if (!j.online) {
          offline_milli += held;
          oversold_milli += j.oversold ? held : 0;
          used_milli += held;
          continue;
        }
        online_milli += held;
        ++online_running;
        used_milli += replica_fraction(j.service) * held;
        bool contended = false;
        for (const TaskPlacement& tp : j.placement) {
          for (int g = 0; g < kMaxGpusPerNode; ++g) {
            if ((tp.gpu_mask & (1u << g)) && gpu_use[p][tp.node.value][g] > kMilliPerGpu)
              contended = true;
          }
        }
        uncontended[j.service] += contended ? 0 : 1;
      }
    }
    if (measured) {
      double step_demand = 0, step_served = 0;
      for (std::size_t s = 0; s < wl.services.size(); ++s) {
        const double weight = GpuMilliOf(wl.services[s].shape) / kMilliPerGpu;
        const double want = wl.services[s].max_replicas * load[s];
        step_demand += want * weight;
        step_served += std::min(want, static_cast<double>(uncontended[s])) * weight;
      }
      demand_sum += step_demand;
      served_sum += step_served;
      run.online_replica_seconds += static_cast<double>(online_running) * ToSeconds(o.step);
      for (const auto& service : wl.services)
        run.static_peak_replica_seconds += service.max_replicas * ToSeconds(o.step);
      auto& h = hourly[static_cast<int>(hour)];
      h.first += step_demand;
      h.second += step_served;
      alloc_sum += (online_milli + offline_milli) / capacity_milli;
      online_alloc_sum += online_milli / capacity_milli;
      offline_alloc_sum += offline_milli / capacity_milli;
      oversold_sum += oversold_milli / capacity_milli;
      used_sum += used_milli / capacity_milli;
      ++steps;
      const double at = ToSeconds(t);
      alloc_series.emplace_back(at, (online_milli + offline_milli) / capacity_milli);
      slo_series.emplace_back(at, step_demand > 0 ? step_served / step_demand : 1.0);
      demand_series.emplace_back(at, step_demand * kMilliPerGpu * u / capacity_milli);
    }

    // 5. Autoscaler (sched/autoscale/, the live controller's): the demand in replicas at the
    //    target utilisation, max_replicas × load, at least one replica. hpa: ceil of it, up at
    //    once, down only to the most wanted over the stabilisation window (Kubernetes' HPA
    //    scale-down stabilisation), no tolerance (the demand is exact here); kpa: Knative's
    //    stable and panic windows over the samples. Newest replicas go first.
    for (std::size_t s = 0; s < wl.services.size(); ++s) {
      const Service& svc = wl.services[s];
      const int current = static_cast<int>(replicas[s].size());
      const int want = autoscalers[s].Desired(
          current, AutoscaleSample{t, current, svc.max_replicas * load[s], 0});
      auto& list = replicas[s];
      while (static_cast<int>(list.size()) < want) {
        Workload w;
        w.name = "svc-" + std::to_string(s) + "-r" + std::to_string(list.size());
        w.kind = WorkloadKind::kInference;
        w.queue = svc.queue;
        w.priority = kOnlinePriority;
        w.preemptible = false;
        w.submit = t;
        w.gpu_models = svc.models;
        w.groups.push_back({"replica", 1, svc.shape});
        const std::size_t i = add_job(std::move(w), online_pool);
        jobs[i].online = true;
        jobs[i].service = static_cast<int>(s);
        list.push_back(i);
      }
      while (static_cast<int>(list.size()) > want) {
        // A pending replica goes before a running one.
        auto it = std::find_if(list.rbegin(), list.rend(),
                               [&](std::size_t i) { return jobs[i].phase == Phase::kPending; });
        const std::size_t i = it != list.rend() ? *it : list.back();
        Job& j = jobs[i];
        Pool& pool = pools[j.pool];
        if (j.phase == Phase::kRunning) {
          pool.state->Release(j.placement);
          std::erase(pool.running, i);
          --running_replicas[s];
        } else {
          std::erase(pool.pending, i);
        }
        j.phase = Phase::kGone;
        std::erase(list, i);
      }
    }
    // 6. One scheduling cycle per pool. The load a replica reports is the highest of the
    //    usage window (a conservative estimate, as Borg's reservations are, EuroSys'15 §5.5),
    //    so that oversold credit does not follow every minute's burst.
    const std::size_t usage_steps =
        static_cast<std::size_t>(std::max<Tick>(1, o.usage_window / o.step));
    for (std::size_t s = 0; s < wl.services.size(); ++s) {
      auto& h = usage_history[s];
      h.push_back(replica_fraction(s));
      while (h.size() > usage_steps) h.pop_front();
      usage_estimate[s] = *std::ranges::max_element(h);
    }
    for (auto& pool : pools) {
      if (pool.pending.empty() && pool.running.empty()) continue;
      Snapshot snap;
      snap.now = t;
      snap.seed = Rng::Mix(o.seed, static_cast<std::uint64_t>(t));
      snap.max_attempts_after_block = kAttemptsAfterBlock;
      snap.jobs.reserve(pool.running.size() + pool.pending.size());
      for (std::size_t i : pool.running) {
        const Job& j = jobs[i];
        JobView v;
        v.job = &j.w;
        v.phase = JobPhase::kRunning;
        v.placement = j.placement;
        v.started = j.started;
        v.remaining = j.online ? 0 : j.started + j.remaining - t;
        v.oversold = j.oversold;
        if (j.online) {
          v.used_gpu_milli = static_cast<std::int32_t>(
              std::lround(usage_estimate[j.service] * j.placement[0].gpu_milli));
        }
        snap.jobs.push_back(std::move(v));
      }
      for (std::size_t i : pool.pending) {
        JobView v;
        v.job = &jobs[i].w;
        v.remaining = jobs[i].online ? 0 : jobs[i].remaining;
        snap.jobs.push_back(std::move(v));
      }
      const Decisions decisions = pool.scheduler->Schedule(snap, *pool.state);
      for (const Decision& d : decisions) {
        const std::size_t i = d.job.value;
        Job& j = jobs[i];
        if (d.kind == Decision::Kind::kBind) {
          j.phase = Phase::kRunning;
          j.placement = d.placement;
          j.oversold = d.oversold;
          j.started = t;
          if (j.first_start < 0) j.first_start = t;
          pool.running.push_back(i);
          if (j.online) {
            ++running_replicas[j.service];
            ++run.online_replica_starts;
          }
        } else if (d.kind == Decision::Kind::kPreempt) {
          if (j.online) return Internal(setup.name + ": an online replica was preempted");
          ++run.evictions;
          if (d.reason.find("took back") != std::string::npos) {
            ++run.evictions_for_credit;
          } else {
            ++run.evictions_for_online;
          }
          run.offline_gpu_hours_lost += static_cast<double>(j.w.TotalGpuMilli()) / kMilliPerGpu *
                                        ToSeconds(t - j.started + setup.colocation.eviction_cost) /
                                        3600;
          j.phase = Phase::kPending;
          j.placement.clear();
          j.oversold = false;
          j.remaining = j.duration + setup.colocation.eviction_cost;
          std::erase(pool.running, i);
          // Back in the queue at its place: the queue orders by priority, submit time, id.
          pool.pending.push_back(i);
        }
      }
      std::erase_if(pool.pending, [&](std::size_t i) { return jobs[i].phase != Phase::kPending; });
    }
  }
  const double n = std::max<double>(1, static_cast<double>(steps));
  run.slo_attainment = demand_sum > 0 ? served_sum / demand_sum : 1.0;
  run.slo_attainment_worst_hour = 1.0;
  for (const auto& [hr, ds] : hourly) {
    if (ds.first > 0)
      run.slo_attainment_worst_hour = std::min(run.slo_attainment_worst_hour, ds.second / ds.first);
  }
  run.allocation_ratio = alloc_sum / n;
  run.online_allocation_ratio = online_alloc_sum / n;
  run.offline_allocation_ratio = offline_alloc_sum / n;
  run.oversold_ratio = oversold_sum / n;
  run.utilisation = used_sum / n;
  run.offline_queue_seconds_mean =
      run.offline_tasks_done > 0 ? queue_sum / static_cast<double>(run.offline_tasks_done) : 0;
  run.allocation_series = Downsample(alloc_series, o.series_points);
  run.slo_series = Downsample(slo_series, o.series_points);
  run.demand_series = Downsample(demand_series, o.series_points);
  run.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return run;
}

}  // namespace

double DiurnalLoad(double hour_of_day, double trough, double peak_hour) {
  return trough +
         (1 - trough) * (1 + std::cos(2 * std::numbers::pi * (hour_of_day - peak_hour) / 24)) / 2;
}

Result<std::vector<double>> ReadMinuteLoadFactors(const std::string& path) {
  std::ifstream in(path);
  if (!in) return IoError(path + ": cannot open");
  std::string line;
  int line_no = 0;
  std::map<long, double> per_minute;
  long first = -1;
  while (std::getline(in, line)) {
    ++line_no;
    if (line_no == 1) {
      if (line.rfind("TIMESTAMP", 0) != 0) {
        return InvalidArgument(path +
                               ":1: column 'TIMESTAMP': expected the Azure LLM trace header");
      }
      continue;
    }
    if (line.empty()) continue;
    // "2023-11-16 18:17:03.9799600": day, hour and minute at fixed offsets.
    long day = 0, hh = 0, mm = 0;
    try {
      if (line.size() < 16 || line[10] != ' ' || line[13] != ':') throw std::invalid_argument(line);
      day = std::stol(line.substr(8, 2));
      hh = std::stol(line.substr(11, 2));
      mm = std::stol(line.substr(14, 2));
    } catch (const std::exception&) {
      return InvalidArgument(path + ":" + std::to_string(line_no) +
                             ": column 'TIMESTAMP': expected YYYY-MM-DD HH:MM:SS");
    }
    const long minute = (day * 24 + hh) * 60 + mm;
    if (first < 0) first = minute;
    per_minute[minute - first] += 1;
  }
  if (per_minute.empty()) return InvalidArgument(path + ": no requests");
  // The first and the last minute are cut by the trace's start and end (the Azure conversation
  // trace's hold 14 s and 8 s of requests): counted whole they would be two dips to 2–7% of the
  // mean in every repetition. Dropped when whole minutes remain between them.
  long from = 0, to = per_minute.rbegin()->first;
  if (to - from >= 2) {
    ++from;
    --to;
  }
  const long minutes = to - from + 1;
  std::vector<double> factors(static_cast<std::size_t>(minutes), 0.0);
  double total = 0;
  for (const auto& [m, c] : per_minute) {
    if (m < from || m > to) continue;
    factors[static_cast<std::size_t>(m - from)] = c;
    total += c;
  }
  const double mean = total / static_cast<double>(minutes);
  for (double& f : factors) f /= mean;
  return factors;
}

namespace {

Status ValidateOptions(const Cluster& cluster, const ColocationOptions& o) {
  if (o.horizon <= 0 || o.step <= 0)
    return InvalidArgument("colocation: horizon and step must be positive");
  if (!(o.online_share > 0 && o.online_share <= 1))
    return InvalidArgument("online-share: must be in (0, 1]");
  if (!(o.offline_load >= 0)) return InvalidArgument("offline-load: must be >= 0");
  if (!(o.target_utilisation > 0 && o.target_utilisation <= 1)) {
    return InvalidArgument("target-utilisation: must be in (0, 1]");
  }
  if (!(o.trough >= 0 && o.trough <= 1)) return InvalidArgument("trough: must be in [0, 1]");
  if (cluster.total_gpus() == 0) return InvalidArgument("colocation: the cluster has no GPUs");
  return {};
}

}  // namespace

Result<ColocationWorkload> DrawColocationWorkload(const Cluster& cluster,
                                                  const std::vector<TraceJob>& pods,
                                                  const ColocationOptions& o) {
  if (auto ok = ValidateOptions(cluster, o); !ok) return std::unexpected(ok.error());
  Rng rng(Rng::Mix(o.seed, 0xC01C));
  Result<Workloads> wl =
      o.workload == "openb" ? OpenbWorkloads(cluster, pods, o, rng)
      : o.workload == "fleet"
          ? FleetWorkloads(cluster, o, rng)
          : InvalidArgument("workload: '" + o.workload + "' is unknown (openb, fleet)");
  if (!wl) return std::unexpected(wl.error());
  FillLoads(o, *wl);
  return wl;
}

Result<ColocationResult> RunColocationWorkload(const Cluster& cluster, const ColocationWorkload& wl,
                                               const ColocationOptions& o) {
  if (auto ok = ValidateOptions(cluster, o); !ok) return std::unexpected(ok.error());
  if (o.setups.empty()) return InvalidArgument("colocation: no setup to run");
  for (const auto& s : o.setups) {
    if (auto ok = ValidateColocationConfig(s.colocation); !ok) {
      return InvalidArgument(s.name + ": " + ok.error().message);
    }
  }
  const auto steps = static_cast<std::size_t>((o.warmup + o.horizon + o.step - 1) / o.step);
  if (wl.loads.size() != wl.services.size())
    return InvalidArgument("colocation: the workload has no load for some service");
  for (const auto& l : wl.loads) {
    if (l.size() < steps) {
      return InvalidArgument(
          fmt::format("colocation: a service's load has {} steps, the warm-up and horizon need {}",
                      l.size(), steps));
    }
  }
  ColocationResult result;
  result.workload = o.workload;
  result.services = static_cast<int>(wl.services.size());
  result.online_peak_gpus = wl.online_peak_milli / kMilliPerGpu;
  result.offline_tasks = static_cast<std::int64_t>(wl.offline.size());
  result.offline_mean_gpu_seconds = wl.offline_mean_gpu_seconds;
  for (const auto& setup : o.setups) {
    auto r = RunSetup(cluster, wl, o, setup);
    if (!r) return std::unexpected(r.error());
    result.runs.push_back(std::move(*r));
  }
  return result;
}

Result<ColocationResult> RunColocationExperiment(const Cluster& cluster,
                                                 const std::vector<TraceJob>& pods,
                                                 const ColocationOptions& o) {
  if (o.setups.empty()) return InvalidArgument("colocation: no setup to run");
  auto wl = DrawColocationWorkload(cluster, pods, o);
  if (!wl) return std::unexpected(wl.error());
  return RunColocationWorkload(cluster, *wl, o);
}

}  // namespace tessera
