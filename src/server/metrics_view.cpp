#include "server/metrics_view.h"

#include "server/job_views.h"

namespace tessera {

namespace {

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

double GpuMilliToGpus(std::int64_t milli) { return static_cast<double>(milli) / kMilliPerGpu; }

}  // namespace

void GatherNodeGaugesLocked(const ControllerState& state, NodeGauges& out) {
  out.nodes.reserve(state.nodes.size());
  for (const auto& [name, ns] : state.nodes) {
    ClusterGauges::Node n;
    n.name = name;
    n.status = NodeStatusName(ns.rec.status);
    n.schedulable = ns.schedulable();
    n.simulated = ns.rec.simulated;
    n.gpu_model = ns.rec.gpu_model;
    n.gpu_count = ns.rec.gpu_count;
    std::int64_t milli = 0;
    if (auto live = state.live_by_node.find(name); live != state.live_by_node.end()) {
      for (auto id : live->second) {
        const TaskRecord& t = state.tasks.at(id);
        // An oversold share is lent from online replicas' GPUs, counted as theirs already.
        milli += static_cast<std::int64_t>(t.gpus.size()) * ClaimedGpuMilli(t);
      }
    }
    n.gpus_allocated = GpuMilliToGpus(milli);
    n.last_seen = ns.last_seen;
    out.capacity += {ns.rec.cpu_milli, ns.rec.memory_mib,
                     static_cast<std::int64_t>(ns.rec.gpu_count) * kMilliPerGpu};
    out.nodes.push_back(std::move(n));
  }
}

ClusterGauges ClusterGaugesOf(const StatusFigures& f, const NodeGauges& nodes,
                              const QueueTreeSpec* tree, Tick now) {
  ClusterGauges g;
  for (const auto& [key, count] : f.job_counts) {
    const auto& [queue, kind, phase] = key;
    g.jobs.emplace(std::tuple(queue, kind, std::string(api::JobPhaseName(phase))), count);
  }
  GatherQueueGauges(QueueRows(tree, f.queue_tree.get(), nodes.capacity, f.queues), g);
  g.nodes = nodes.nodes;
  for (auto& n : g.nodes) n.heartbeat_age_seconds = static_cast<double>(now - n.last_seen) / 1000.0;
  g.cycles = f.cycles;
  g.last_event_seq = f.last_event_seq;
  g.free_gpus = GpuMilliToGpus(f.free_gpu_milli);
  g.capacity = nodes.capacity;
  g.gather_locked_seconds = nodes.locked_seconds;
  return g;
}

void GatherQueueGauges(const nlohmann::json& queue_rows, ClusterGauges& out) {
  for (const auto& row : queue_rows) {
    ClusterGauges::Queue q;
    q.name = row.value("name", "");
    q.allocated_gpus = row.value("gpusAllocated", 0.0);
    q.dominant_share = row.value("dominantShare", 0.0);
    q.pending_gpus = row.value("pendingGpus", 0.0);
    q.pending_jobs = row.value("pendingJobs", 0);
    if (row.contains("guaranteedGpus")) q.guaranteed_gpus = row["guaranteedGpus"].get<double>();
    if (row.contains("borrowLimitGpus")) q.borrow_limit_gpus = row["borrowLimitGpus"].get<double>();
    out.queues.push_back(std::move(q));
  }
}

namespace {

void WriteQueues(const ClusterGauges& g, MetricsWriter& out) {
  auto each = [&](const char* name, const char* help, auto value) {
    out.Family(name, MetricType::kGauge, help);
    for (const auto& q : g.queues) {
      if (auto v = value(q)) out.Sample({{"queue", q.name}}, *v);
    }
  };
  using Q = ClusterGauges::Queue;
  each("tessera_queue_allocated_gpus",
       "GPUs held by the queue's live tasks (subtree for inner queues).",
       [](const Q& q) { return std::optional(q.allocated_gpus); });
  each("tessera_queue_guaranteed_gpus",
       "The queue's guaranteed GPUs as its tree resolves against the registered nodes.",
       [](const Q& q) { return q.guaranteed_gpus; });
  each("tessera_queue_borrow_limit_gpus", "The most GPUs the queue may borrow above its guarantee.",
       [](const Q& q) { return q.borrow_limit_gpus; });
  each("tessera_queue_dominant_share",
       "The largest of the queue's GPU, CPU and memory allocation over the registered capacity "
       "(DRF).",
       [](const Q& q) { return std::optional(q.dominant_share); });
  each("tessera_queue_pending_jobs", "Jobs of the queue waiting to start.",
       [](const Q& q) { return std::optional<double>(q.pending_jobs); });
  each("tessera_queue_pending_gpus", "GPUs the queue's pending jobs ask for.",
       [](const Q& q) { return std::optional(q.pending_gpus); });
}

void WriteNodes(const ClusterGauges& g, MetricsWriter& out) {
  auto each = [&](const char* name, const char* help, auto value) {
    out.Family(name, MetricType::kGauge, help);
    for (const auto& n : g.nodes) {
      out.Sample({{"node", n.name}, {"simulated", n.simulated ? "true" : "false"}}, value(n));
    }
  };
  using N = ClusterGauges::Node;
  each("tessera_node_schedulable",
       "1 when the node is Ready and runs no strays, as the controller sees it.",
       [](const N& n) { return n.schedulable ? 1.0 : 0.0; });
  each("tessera_node_gpus", "GPUs the node registered.",
       [](const N& n) { return static_cast<double>(n.gpu_count); });
  each("tessera_node_gpus_allocated",
       "GPUs of the node held by live tasks (shares as fractions; oversold shares not counted).",
       [](const N& n) { return n.gpus_allocated; });
  each("tessera_node_heartbeat_age_seconds",
       "Time since the controller last heard from the node's agent (heartbeat lag).",
       [](const N& n) { return n.heartbeat_age_seconds; });
  out.Family("tessera_nodes", MetricType::kGauge, "Registered nodes by status.");
  std::map<std::string, int> by_status{{"Ready", 0}, {"NotReady", 0}, {"Lost", 0}};
  for (const auto& n : g.nodes) ++by_status[n.status];
  for (const auto& [status, count] : by_status) out.Sample({{"status", status}}, count);
}

}  // namespace

void WriteClusterGauges(const ClusterGauges& g, MetricsWriter& out) {
  out.Family("tessera_jobs", MetricType::kGauge,
             "Jobs held by the controller, by queue, kind and phase.");
  for (const auto& [key, count] : g.jobs) {
    const auto& [queue, kind, phase] = key;
    out.Sample({{"queue", queue}, {"kind", kind}, {"phase", phase}}, count);
  }
  WriteQueues(g, out);
  WriteNodes(g, out);
  out.Single("tessera_scheduling_cycles_total", MetricType::kCounter,
             "Scheduling cycles run since the controller started.", static_cast<double>(g.cycles));
  out.Single("tessera_events_last_sequence", MetricType::kGauge,
             "Sequence number of the last event committed (GET /v1/events?since=).",
             static_cast<double>(g.last_event_seq));
  out.Single("tessera_free_gpus", MetricType::kGauge,
             "GPUs free on schedulable nodes after the last scheduling cycle.", g.free_gpus);
  out.Single("tessera_metrics_gather_locked_seconds", MetricType::kGauge,
             "The longest the last gathering of these gauges held the controller's lock at once.",
             g.gather_locked_seconds);
}

void MetricsView::Refresh() {
  using Clock = std::chrono::steady_clock;
  std::lock_guard refresh(refresh_mu_);
  auto gauges = std::make_shared<NodeGauges>();
  {
    std::lock_guard core_lock(core_.mu);
    const auto start = Clock::now();
    GatherNodeGaugesLocked(core_.state, *gauges);
    gauges->uses = DeviceUsesLocked(core_.state, core_.state.gpu_usage);
    gauges->scales = ScaleGaugesLocked(core_.state);
    gauges->locked_seconds = Seconds(Clock::now() - start);
  }
  refreshed_at_ = Clock::now();
  std::lock_guard lock(mu_);
  nodes_ = std::move(gauges);
}

void MetricsView::RefreshIfDue() {
  {
    std::lock_guard refresh(refresh_mu_);
    if (refreshed_at_ && std::chrono::steady_clock::now() - *refreshed_at_ < min_gather_interval_)
      return;
  }
  Refresh();
}

std::string MetricsView::Text() {
  if (min_gather_interval_.count() == 0) Refresh();
  MetricsWriter out;
  core_.metrics.Write(out);
  std::shared_ptr<const NodeGauges> nodes;
  {
    std::lock_guard lock(mu_);
    nodes = nodes_;
  }
  const auto& tree = core_.options().queues;
  WriteClusterGauges(
      ClusterGaugesOf(*core_.published.Get(), *nodes, tree ? &*tree : nullptr, core_.Now()), out);
  WriteDeviceUses(nodes->uses, out);
  WriteScaleGauges(nodes->scales, out);
  return out.Take();
}

}  // namespace tessera
